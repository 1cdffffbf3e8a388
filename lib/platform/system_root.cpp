#include "platform/system_root.h"

#include <sys/stat.h>

#include <cstdlib>

#include "common/error.h"
#include "common/setting_spelling.h"
#include "platform/system_file.h"

namespace k3 {

SystemRoot::SystemRoot(std::string root) : root_(std::move(root)) {
  if (root_.empty()) root_.push_back('/');
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

namespace {
// A recorded tree that is not there would make every reading "absent" and
// the report silently wrong: name it instead.
SystemRoot existing(const std::string& dir, const std::string& given_as) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error(ExitCode::kUsage, given_as + " " + dir +
                                      ": no such directory (it should hold a recorded /proc "
                                      "and /sys tree; leave it out to read the live system)");
  return SystemRoot(dir);
}
}  // namespace

SystemRoot SystemRoot::from_flag_or_env(const std::string& flag) {
  if (!flag.empty()) return existing(flag, spelled(kRootSetting));
  if (const char* env = std::getenv(kRootEnv); env && *env) return existing(env, std::string("$") + kRootEnv);
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
