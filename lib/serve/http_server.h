// k3-serve's HTTP side (cpp-httplib): routes, API-key checks, limits and
// OpenAI-shaped errors. It listens before the model is loaded (GET /health
// answers 503 "loading" until set_backend()), so a supervisor can tell a
// slow load from a dead server.
//
//   GET  /                     the chat page (web_page.h; no key needed)
//   GET  /health               200 {"status":"ok"} when ready, 503 with the load progress before (no key needed)
//   GET  /v1/models            the served model
//   POST /v1/chat/completions  chat (completion_route.h)
//   POST /v1/completions       text or token-id prompt
//   POST /tokenize             a chat request's prompt ids (as vLLM's /tokenize)
//   POST /v1/messages          Anthropic's Messages API (messages_route.h; its errors in Anthropic's shape)
//   POST /v1/messages/count_tokens
//   GET  /metrics              Prometheus text
// Every other path is 404, every error body OpenAI's {"error": {...}}.
// Before any route: the connection's framing and limits (guarded_server.h),
// then the pre-routing checks of every path: Host, Origin and CORS
// preflights, a POST's Content-Type (request_guard.h), then the API key. A
// route added with Get/Post below gets them all; it only needs listing in
// the logger's known paths (for /metrics) and, when it answers without
// writing until the end, polling client_gone() (client_connection.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "serve/load_status.h"
#include "serve/request_guard.h"
#include "serve/response_store.h"
#include "serve/serve_metrics.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace k3 {
class Tokenizer;
}

namespace k3::serve {

class GuardedServer;
class SlotScheduler;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;      // 0: any free port (bound_port() tells which)
  std::string api_key;  // empty: no key needed
  std::string model_name;
  size_t max_body_bytes = 8u << 20;
  int max_depth = 64;
  int64_t context = 8192;         // positions a sequence may reach
  size_t http_threads = 32;       // connections one peer address may hold (streams hold one each)
  int retry_after_seconds = 2;    // 429's Retry-After
  GuardOptions guard;             // Host, Origin (request_guard.h)
  int read_timeout_seconds = 30;  // a request, from its first byte to its last (408 after)
  bool thinking = true;           // a chat request's default (RequestLimits)
  std::string effort = "max";
  bool omit_hosted_tools = false;  // /v1/responses: hosted tools (web_search) left out, not refused
  // The fewest ids a chat's system prompt and tool list need to be kept as a
  // state of their own (JobSpec::system_prefix): a shorter one costs less to
  // evaluate than a state holds; 0: never kept.
  size_t system_keep_min = 256;
};

// What the routes need once the model is loaded.
struct ServeBackend {
  const Tokenizer* tokenizer = nullptr;
  std::vector<int> eos_ids;            // the model's (config, generation_config, tokenizer)
  std::vector<int32_t> chat_stop_ids;  // <|end_of_msg|> and the model's
  SlotScheduler* scheduler = nullptr;
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, ServeMetrics& metrics);
  ~HttpServer();

  // Binds the address; throws Error(kUsage) naming it when it cannot.
  void bind();
  int bound_port() const { return port_; }
  // Serves on a thread of its own until stop().
  void start();
  void set_backend(ServeBackend backend);
  bool ready() const { return ready_; }
  // What /health reports until set_backend() (the loader updates it).
  LoadStatus& load_status() { return load_status_; }
  // Stops accepting connections and joins the listener (in-flight handlers end first).
  void stop();

 private:
  void routes();
  ServerOptions options_;
  ServeMetrics& metrics_;
  // Answers the checks of request_guard.h; true when the request was refused (or was a preflight).
  bool refused_by_guard(const httplib::Request& req, httplib::Response& res) const;
  std::unique_ptr<GuardedServer> http_;
  std::thread listener_;
  int port_ = 0;
  std::atomic<bool> ready_{false};
  ServeBackend backend_;
  LoadStatus load_status_;
  ResponseStore responses_;  // kept /v1/responses replies, for previous_response_id
};

}  // namespace k3::serve
