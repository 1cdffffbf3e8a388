// Helpers shared by the GoogleTest executables: the exit code a call ends
// with, bit-identical float vectors, damaging a file in place, a fresh
// scratch directory (named, or of its own), and what was written to a stdio
// stream.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

#include "common/error.h"

namespace k3::test {

// The ExitCode of the k3::Error `f` throws (kOk when it returns); its
// message goes to `msg` when given.
inline ExitCode code_of(const std::function<void()>& f, std::string* msg = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (msg) *msg = e.what();
    return e.code();
  }
  return ExitCode::kOk;
}

// True when `a` and `b` hold the same floats bit for bit (memcmp, so -0.0
// differs from 0.0 and NaNs compare by payload). Empty vectors are equal
// without touching data(), which may be null.
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Flips bits of the byte at `off` of file `p`.
inline void flip_byte(const std::filesystem::path& p, uint64_t off) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(off));
  char c = 0;
  f.read(&c, 1);
  c ^= 0x5a;
  f.seekp(static_cast<std::streamoff>(off));
  f.write(&c, 1);
}

// An empty directory <tmp>/k3-<name>-<pid>, removed first if a failed run
// left it behind.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("k3-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

// A directory of its own under /tmp (mkdtemp: no name a planted one could
// take), removed with what is in it at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    char tmpl[] = "/tmp/k3-test-XXXXXX";
    if (const char* made = ::mkdtemp(tmpl)) dir_ = made;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path() const { return dir_.string(); }
  size_t entries() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_)) ++n;
    return n;
  }
  bool empty() const { return entries() == 0; }

 private:
  std::filesystem::path dir_;
};

// Everything written so far to `f` (a std::tmpfile() standing in for a
// terminal or a log), read back from its start.
inline std::string file_contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

}  // namespace k3::test
