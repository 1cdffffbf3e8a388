// Reading the kernel's small text files (/proc, /sys) under a root
// directory, so that tests can point every reader at a recorded tree.
#pragma once

#include <optional>
#include <string>

namespace k3 {

// The text of `path` under `root` ("" or "/" for the live system); nullopt
// when absent or unreadable (a missing /sys file is normal: cgroup v1 vs v2,
// containers). Throws k3::Error(kBadInput) naming the file when it is not a
// regular file (a link to /dev/zero, a FIFO) or larger than 4 MiB.
std::optional<std::string> read_system_file(const std::string& root, const std::string& path);

// The first line of `text` without its trailing blanks.
std::string first_line(const std::string& text);

}  // namespace k3
