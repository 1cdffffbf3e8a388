#include "serve/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "common/json_writer.h"
#include "serve/anthropic_response.h"
#include "serve/api_error.h"
#include "serve/bearer_auth.h"
#include "serve/completion_route.h"
#include "serve/connection_pool.h"
#include "serve/guarded_server.h"
#include "serve/json_build.h"
#include "serve/messages_route.h"
#include "serve/models_list.h"
#include "serve/request_log.h"
#include "serve/responses_route.h"
#include "serve/web_page.h"

namespace k3::serve {

namespace {

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& code = "") {
  res.status = status;
  res.set_content(error_body(status, message, "", code), "application/json");
}

// /health's body once the model is ready: {"status": "ok"}.
std::string health_ok_body() {
  JsonWriter w;
  w.begin_object().key("status").value("ok").end_object();
  return w.take();
}

ConnectionOptions connection_options(const ServerOptions& o) {
  ConnectionOptions c;
  c.framing.max_body_bytes = o.max_body_bytes;
  c.peers.max_per_peer = o.http_threads;
  c.peers.max_connections = std::max<size_t>(256, 4 * o.http_threads);
  c.read_timeout = std::chrono::seconds(o.read_timeout_seconds);
  c.head_timeout = std::min(c.head_timeout, c.read_timeout);
  return c;
}

}  // namespace

HttpServer::HttpServer(ServerOptions options, ServeMetrics& metrics)
    : options_(std::move(options)),
      metrics_(metrics),
      http_(std::make_unique<GuardedServer>(connection_options(options_))) {
  // A thread per open connection, up to the connection bound: connections
  // still sending hold theirs until their deadline or eviction, not a shared one.
  const size_t threads = std::max<size_t>(256, 4 * options_.http_threads) + 16;
  http_->new_task_queue = [threads] { return new ConnectionPool(threads); };
  http_->set_payload_max_length(options_.max_body_bytes);
  // SO_REUSEADDR only (a restart may bind while old connections linger in
  // TIME_WAIT). httplib's default adds SO_REUSEPORT, with which a second
  // k3-serve on a taken port binds too and the kernel splits the clients
  // between the two servers instead of refusing the second.
  http_->set_socket_options([](int sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http_->set_read_timeout(30, 0);
  http_->set_write_timeout(30, 0);
  routes();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::routes() {
  httplib::Server& s = *http_;
  // Every path: Host, Origin, Content-Type, then the key (every endpoint but
  // /health and the chat page needs it when one is set).
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    request_log::begin();  // the request's time starts here (its line is written by the logger below)
    if (refused_by_guard(req, res)) return httplib::Server::HandlerResponse::Handled;
    if (options_.api_key.empty() || req.path == "/health" || req.path == "/")
      return httplib::Server::HandlerResponse::Unhandled;
    if (bearer_matches(req.get_header_value("Authorization"), options_.api_key) ||
        (req.has_header("x-api-key") && constant_time_equal(req.get_header_value("x-api-key"), options_.api_key)))
      return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, 401, "a valid API key is needed: send the header \"Authorization: Bearer KEY\"", "invalid_api_key");
    if (is_messages_path(req.path))  // Anthropic's clients send x-api-key and read Anthropic's error shape
      res.set_content(anthropic_error_body(401, "a valid API key is needed: send the header \"x-api-key: KEY\""),
                      "application/json");
    return httplib::Server::HandlerResponse::Handled;
  });
  // Errors httplib answers itself (413 for a body over the limit, 404 for an
  // unknown path, 400 for a malformed request line) get an OpenAI-shaped body.
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message = "HTTP " + std::to_string(res.status);
    if (res.status == 413)
      message = "request body: over the limit of " + std::to_string(options_.max_body_bytes) + " bytes";
    else if (res.status == 404) message = "no such endpoint: " + req.method + " " + req.path;
    else if (res.status == 405) message = "method not allowed: " + req.method + " " + req.path;
    res.set_content(
        is_messages_path(req.path) ? anthropic_error_body(res.status, message) : error_body(res.status, message),
        "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_error(res, 500, "internal error", "internal_error");
  });
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    const bool known = req.path == "/" || req.path == "/health" || req.path == "/metrics" || req.path == "/v1/models" ||
                       req.path == "/v1/chat/completions" || req.path == "/v1/completions" || req.path == "/tokenize" ||
                       req.path == "/v1/responses" || req.path == "/v1/messages" ||
                       req.path == "/v1/messages/count_tokens";
    metrics_.request_done(known ? req.path : "other", res.status);
    request_log::end(req.method, req.path, res.status, metrics_);
  });

  add_chat_page(s);
  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (ready_) {
      res.set_content(health_ok_body(), "application/json");
      return;
    }
    res.status = 503;
    res.set_header("Retry-After", "5");
    res.set_content(load_status_.json(), "application/json");
  });
  s.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    const ModelsShape shape = req.has_header("anthropic-version") ? ModelsShape::kAnthropic : ModelsShape::kOpenAi;
    res.set_content(models_list_json(options_.model_name, options_.context, shape), "application/json");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.prometheus_text(), "text/plain; version=0.0.4");
  });
  auto post = [this, &s](const char* path, auto handler) {
    s.Post(path, [this, handler](const httplib::Request& req, httplib::Response& res) {
      if (!ready_) {
        res.set_header("Retry-After", "5");
        send_error(res, 503, "the model is still loading (GET /health says when it is ready)", "loading");
        return;
      }
      run_guarded([&] { handler(req, res); },
                  [&](const ApiError& e) {  // OpenAI's error shape
                    res.status = e.status();
                    res.set_content(error_body(e), "application/json");
                  });
    });
  };
  post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_completion(req, res, Endpoint::kChat, options_, backend_);
  });
  post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_completion(req, res, Endpoint::kCompletion, options_, backend_);
  });
  post("/v1/responses", [this](const httplib::Request& req, httplib::Response& res) {
    handle_responses(req, res, options_, backend_, responses_);
  });
  post("/tokenize",
       [this](const httplib::Request& req, httplib::Response& res) { handle_tokenize(req, res, options_, backend_); });
  add_messages_routes(s, ready_, options_, backend_);  // Anthropic's Messages API, with its own error shape
}

bool HttpServer::refused_by_guard(const httplib::Request& req, httplib::Response& res) const {
  const std::string host = req.get_header_value("Host");
  if (host.empty() && req.version != "HTTP/1.0") {
    send_error(res, 400, "the Host header is missing (HTTP/1.1 requires it)", "host_missing");
    return true;
  }
  if (!host.empty() && !host_allowed(host, options_.guard)) {
    send_error(res, 403,
               "Host " + host.substr(0, 200) +
                   ": not a name this server answers to (a loopback name, --host, or --allowed-hosts)",
               "host_not_allowed");
    return true;
  }
  const std::string origin = req.get_header_value("Origin");
  const OriginVerdict verdict = check_origin(origin, host, options_.guard);
  if (verdict == OriginVerdict::kRefused) {
    send_error(res, 403,
               "Origin " + origin.substr(0, 200) +
                   ": a page from another origin may not use this server (start it with --cors-origin to allow one)",
               "origin_not_allowed");
    return true;
  }
  if (verdict == OriginVerdict::kAllowed) {
    res.set_header("Access-Control-Allow-Origin", origin);
    res.set_header("Vary", "Origin");
  }
  if (req.method == "OPTIONS") {  // a CORS preflight, or a plain OPTIONS: what may be sent
    const std::string method = req.get_header_value("Access-Control-Request-Method");
    if (verdict == OriginVerdict::kAllowed && !method.empty()) {
      if (method != "GET" && method != "POST") {
        send_error(res, 403, "Access-Control-Request-Method " + method.substr(0, 40) + ": only GET and POST are served",
                   "method_not_allowed");
        return true;
      }
      res.set_header("Access-Control-Allow-Methods", "GET, POST");
      res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
      res.set_header("Access-Control-Max-Age", "600");
    }
    res.set_header("Allow", "GET, POST, OPTIONS");
    res.status = 204;
    return true;
  }
  if (req.method == "POST" && !is_json_content_type(req.get_header_value("Content-Type"))) {
    const std::string type = req.get_header_value("Content-Type");
    send_error(res, 415,
               "Content-Type " + (type.empty() ? std::string("(none)") : type.substr(0, 100)) +
                   ": the API takes application/json",
               "unsupported_media_type");
    return true;
  }
  return false;
}

void HttpServer::bind() {
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
  } else if (http_->bind_to_port(options_.host, options_.port)) {
    port_ = options_.port;
  } else {
    port_ = -1;
  }
  if (port_ <= 0)
    throw Error(ExitCode::kUsage, "cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                                      " (address in use or not this machine's): choose another --host or --port");
}

void HttpServer::start() {
  listener_ = std::thread([this] { http_->listen_after_bind(); });
}

void HttpServer::set_backend(ServeBackend backend) {
  backend_ = std::move(backend);
  ready_ = true;
}

void HttpServer::stop() {
  if (!listener_.joinable()) return;
  http_->stop();
  listener_.join();
}

}  // namespace k3::serve
