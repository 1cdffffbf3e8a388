#include "serve/anthropic_fields.h"

#include <cstring>

#include "serve/api_error.h"

namespace k3::serve {

void refuse_field(const std::string& field, const std::string& what) {
  throw ApiError(400, field + ": " + what, field);
}

std::string found_kind(const JsonValue& v) { return std::string(" (found ") + json_kind_name(v.kind) + ")"; }

void only_keys(const JsonValue& obj, const std::string& path, std::initializer_list<const char*> allowed) {
  for (const std::string& key : obj.keys) {
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      refuse_field(path.empty() ? key : path + "." + key, "is not supported here (k3 reads " + list + ")");
    }
  }
}

}  // namespace k3::serve
