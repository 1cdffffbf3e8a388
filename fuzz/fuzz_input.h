// What every fuzz target shares: the fuzzed bytes as a file (for parsers
// that take a path), a split of the input into the several texts a parser
// takes, and the rule that decides what counts as a finding.
//
// A k3::Error is the parser refusing bad input the documented way. Any
// other exception escaping a parser would reach a tool's main() as "this is
// a bug in k3", so it aborts here and the fuzzer reports it, as it does
// crashes, sanitizer reports, leaks and timeouts.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace k3::fuzz {

// Runs `f`, accepting k3::Error only. Anything else aborts.
template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const k3::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: a parser threw %s instead of k3::Error: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
}

// An in-memory file holding the current input, reachable by path.
class MemoryFile {
 public:
  MemoryFile() : fd_(::memfd_create("k3-fuzz", 0)) {
    if (fd_ < 0) std::abort();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  const std::string& write(const uint8_t* data, size_t n) {
    if (::ftruncate(fd_, 0) != 0 || (n && ::pwrite(fd_, data, n, 0) != static_cast<ssize_t>(n))) std::abort();
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

// The input cut at NUL bytes into up to `parts` texts (missing ones empty):
// targets whose parser takes two files read them as "first\0second".
inline std::vector<std::string> split_input(const uint8_t* data, size_t n, size_t parts) {
  std::vector<std::string> out;
  std::string_view rest(reinterpret_cast<const char*>(data), n);
  while (out.size() + 1 < parts) {
    const size_t z = rest.find('\0');
    if (z == std::string_view::npos) break;
    out.emplace_back(rest.substr(0, z));
    rest.remove_prefix(z + 1);
  }
  out.emplace_back(rest);
  out.resize(parts);
  return out;
}

}  // namespace k3::fuzz
