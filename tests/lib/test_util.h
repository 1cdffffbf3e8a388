// Helpers shared by the GoogleTest executables: the exit code a call ends
// with, and damaging a file in place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

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

}  // namespace k3::test
