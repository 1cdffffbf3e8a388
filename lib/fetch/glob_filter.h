// --include / --exclude selection of repository files with shell globs, as
// the Hugging Face client does it: '*' also matches '/', so "*.safetensors"
// selects shards in subfolders too. No include pattern selects everything.
#pragma once

#include <string>
#include <vector>

namespace k3 {

class GlobFilter {
 public:
  GlobFilter(std::vector<std::string> include, std::vector<std::string> exclude)
      : include_(std::move(include)), exclude_(std::move(exclude)) {}
  bool selects(const std::string& path) const;

 private:
  std::vector<std::string> include_, exclude_;
};

}  // namespace k3
