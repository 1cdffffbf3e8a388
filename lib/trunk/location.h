// Where the tools suggest putting a model's packed trunk: beside the model
// directory, as k3trunk (~/k3model -> ~/k3trunk), on the same disk.
#pragma once

#include <string>

namespace k3 {

inline std::string suggested_trunk_dir(std::string model_dir) {
  while (model_dir.size() > 1 && model_dir.back() == '/') model_dir.pop_back();
  const size_t slash = model_dir.rfind('/');
  if (slash == std::string::npos) return "k3trunk";
  return model_dir.substr(0, slash + 1) + "k3trunk";
}

}  // namespace k3
