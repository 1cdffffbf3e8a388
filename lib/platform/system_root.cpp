#include "platform/system_root.h"

#include <cstdlib>

#include "platform/system_file.h"

namespace k3 {

SystemRoot::SystemRoot(std::string root) : root_(std::move(root)) {
  if (root_.empty()) root_ = "/";
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

SystemRoot SystemRoot::from_flag_or_env(const std::string& flag) {
  if (!flag.empty()) return SystemRoot(flag);
  if (const char* env = std::getenv(kRootEnv); env && *env) return SystemRoot(env);
  return SystemRoot("/");
}

std::string SystemRoot::path(const std::string& system_path) const {
  if (is_live()) return system_path;
  return root_ + system_path;
}

std::optional<std::string> SystemRoot::read(const std::string& system_path) const {
  return read_system_file("", path(system_path));
}

}  // namespace k3
