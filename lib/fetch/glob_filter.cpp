#include "fetch/glob_filter.h"

#include <fnmatch.h>

namespace k3 {

namespace {
bool any_match(const std::vector<std::string>& patterns, const std::string& path) {
  for (const std::string& p : patterns)
    if (::fnmatch(p.c_str(), path.c_str(), 0) == 0) return true;
  return false;
}
}  // namespace

bool GlobFilter::selects(const std::string& path) const {
  if (!include_.empty() && !any_match(include_, path)) return false;
  return !any_match(exclude_, path);
}

}  // namespace k3
