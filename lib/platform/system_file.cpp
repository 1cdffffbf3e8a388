#include "platform/system_file.h"

#include <fstream>
#include <sstream>

namespace k3 {

std::optional<std::string> read_system_file(const std::string& root, const std::string& path) {
  std::ifstream in(root == "/" ? path : root + path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::string first_line(const std::string& text) {
  std::string s = text.substr(0, text.find('\n'));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace k3
