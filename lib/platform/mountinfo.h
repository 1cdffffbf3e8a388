// /proc/self/mountinfo: which filesystem a directory lives on, and where the
// cgroup hierarchies are mounted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace k3 {

struct MountEntry {
  int id = 0;
  int parent_id = 0;
  uint32_t major = 0;
  uint32_t minor = 0;
  std::string root;  // the part of the filesystem mounted here
  std::string mount_point;
  std::string mount_options;
  std::string fs_type;  // "ext4", "nfs4", "fuse.sshfs", "cgroup2", ...
  std::string source;   // "/dev/nvme0n1p2", "server:/export", ...
  std::string super_options;
};

// Parses every well-formed line; octal escapes (\040 for space) are decoded.
// Malformed lines are skipped: a recorded file may be cut short.
std::vector<MountEntry> parse_mountinfo(const std::string& text);

// The mount a canonical absolute `path` lives on: the longest mount point
// that is a path prefix of it, preferring entries whose device matches
// (major:minor from stat) and, among equals, the later (covering) mount.
std::optional<MountEntry> find_mount_for_path(const std::vector<MountEntry>& mounts, const std::string& path,
                                              std::optional<std::pair<uint32_t, uint32_t>> dev);

// True for filesystems where large random O_DIRECT reads are slow or
// unsupported: network filesystems and FUSE.
bool is_network_or_fuse_fs(const std::string& fs_type);

}  // namespace k3
