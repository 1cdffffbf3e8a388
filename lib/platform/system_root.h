// Where k3-doctor reads /proc and /sys from.
//
// Normally "/", the live machine. Tests (and bug reports) point it at a
// recorded tree holding copies of the same files, e.g.
// tests/data/doctor/v2-container/proc/meminfo, so every parser runs against
// known input. Only /proc and /sys reads go through the root; the model and
// trunk directories are always the real ones.
#pragma once

#include <optional>
#include <string>

#include "platform/system_file.h"

namespace k3 {

// Environment variable naming the root when --root is not given.
inline constexpr const char* kRootEnv = "K3_DOCTOR_ROOT";
// The key messages name the recorded tree by (common/setting_spelling.h; k3-doctor: --root).
inline constexpr const char* kRootSetting = "root";

class SystemRoot {
 public:
  explicit SystemRoot(std::string root = "/");
  // --root when non-empty, else $K3_DOCTOR_ROOT, else "/".
  static SystemRoot from_flag_or_env(const std::string& flag);

  const std::string& root() const { return root_; }
  bool is_live() const { return root_ == "/"; }
  // The real path of an absolute system path such as "/proc/meminfo".
  std::string path(const std::string& system_path) const;
  // The file's text, or nullopt when it is absent or unreadable (a missing
  // /sys file is normal: cgroup v1 vs v2, containers, old kernels).
  std::optional<std::string> read(const std::string& system_path) const;

 private:
  std::string root_;
};

}  // namespace k3
