#include "serve/json_build.h"

#include "common/json_writer.h"

namespace k3::serve {

std::string write_json(const JsonValue& v) {
  JsonWriter w(0);
  write_json_value(w, v, /*refuse_wide_integers=*/true);
  return w.take();
}

}  // namespace k3::serve
