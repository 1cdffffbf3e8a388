#include "serve/models_list.h"

#include "serve/json_build.h"

namespace k3::serve {

std::string models_list_json(const std::string& model_name, int64_t context, ModelsShape shape) {
  JsonValue model = JsonValue::object();
  JsonValue body = JsonValue::object();
  if (shape == ModelsShape::kAnthropic) {
    model.set("type", "model").set("id", model_name).set("display_name", model_name);
    model.set("created_at", "1970-01-01T00:00:00Z");  // as OpenAI's "created": 0, no date to give
    body.set("data", JsonValue::array().push(std::move(model)));
    body.set("has_more", false).set("first_id", model_name).set("last_id", model_name);
    return write_json(body);
  }
  model.set("id", model_name).set("object", "model").set("created", json_int(0)).set("owned_by", "k3");
  model.set("max_model_len", json_int(context));
  body.set("object", "list").set("data", JsonValue::array().push(std::move(model)));
  return write_json(body);
}

}  // namespace k3::serve
