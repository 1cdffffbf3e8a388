// Layer serve: k3-serve, K3 behind OpenAI's HTTP API (requests, responses, SSE, the slot scheduler, the conversation
// cache, metrics).
//
// A refused request as OpenAI's API reports it: an HTTP status and the body
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// so clients written for OpenAI show the message instead of failing to parse.
#pragma once

#include <new>
#include <stdexcept>
#include <string>

#include "common/error.h"

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

// Runs a route's handler so that the server keeps serving whatever it
// throws: each failure becomes one ApiError handed to `reply` (which writes
// it in the route's error shape, OpenAI's or Anthropic's): a refusal as it
// is, a k3::Error as 400 (bad input) or 500, an allocation failure as 503
// out_of_memory (this request's share did not fit), anything else as 500
// internal_error.
template <typename Handler, typename Reply>
void run_guarded(Handler&& handler, Reply&& reply) {
  try {
    handler();
  } catch (const ApiError& e) {
    reply(e);
  } catch (const Error& e) {
    reply(ApiError(e.code() == ExitCode::kBadInput ? 400 : 500, e.message()));
  } catch (const std::bad_alloc&) {
    reply(ApiError(503, "out of memory for this request: send a shorter one, or start k3-serve with fewer --slots", "",
                   "out_of_memory"));
  } catch (const std::exception& e) {
    reply(ApiError(500, std::string("internal error: ") + e.what(), "", "internal_error"));
  }
}

}  // namespace k3::serve
