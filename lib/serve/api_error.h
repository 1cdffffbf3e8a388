// Layer serve: k3-serve, K3 behind OpenAI's HTTP API (requests, responses, SSE, the slot scheduler, the conversation
// cache, metrics).
//
// A refused request as OpenAI's API reports it: an HTTP status and the body
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// so clients written for OpenAI show the message instead of failing to parse.
#pragma once

#include <stdexcept>
#include <string>

namespace k3::serve {

class ApiError : public std::runtime_error {
 public:
  // `param`: the request field at fault ("" when none); `code`: a short
  // machine-readable reason ("" for null).
  ApiError(int status, std::string message, std::string param = "", std::string code = "")
      : std::runtime_error(message),
        status_(status),
        message_(std::move(message)),
        param_(std::move(param)),
        code_(std::move(code)) {}
  int status() const { return status_; }
  // The whole message (what() is cut at a NUL, which a quoted request field may hold).
  const std::string& message() const { return message_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string message_, param_, code_;
};

// OpenAI's error type for an HTTP status: invalid_request_error (4xx but the
// ones below), authentication_error (401), not_found_error (404),
// rate_limit_error (429), server_error (5xx).
const char* error_type(int status);

// The JSON body of an error.
std::string error_body(int status, const std::string& message, const std::string& param = "",
                       const std::string& code = "");
inline std::string error_body(const ApiError& e) { return error_body(e.status(), e.message(), e.param(), e.code()); }

}  // namespace k3::serve
