#include "serve/api_error.h"

#include "serve/json_build.h"

namespace k3::serve {

const char* error_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 404) return "not_found_error";
  if (status == 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

std::string error_body(int status, const std::string& message, const std::string& param, const std::string& code) {
  JsonValue e = JsonValue::object();
  e.set("message", JsonValue::string(message));
  e.set("type", JsonValue::string(error_type(status)));
  e.set("param", param.empty() ? JsonValue() : JsonValue::string(param));
  e.set("code", code.empty() ? JsonValue() : JsonValue::string(code));
  JsonValue body = JsonValue::object();
  body.set("error", std::move(e));
  return write_json(body);
}

}  // namespace k3::serve
