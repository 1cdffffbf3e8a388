#include "serve_flags.h"

#include <filesystem>

#include <cstdio>

#include "cli/flag_checks.h"
#include "common/error.h"
#include "serve/bearer_auth.h"
#include "serve/prompt_cache_dir.h"
#include "serve_fit.h"

namespace k3 {

void ServeFlags::add_to(CLI::App& app) {
  app.add_option("--host", server.host,
                 "Address to listen on (default 127.0.0.1; another than loopback needs --api-key)");
  app.add_option("--port", server.port, "Port (default 8080; 0: any free port, printed at start)")
      ->check(cli::in_range(0, 65535));
  key_ = app.add_option(
      "--api-key", server.api_key,
      "Every endpoint but /health and the chat page / needs \"Authorization: Bearer KEY\" (or \"x-api-key: KEY\") "
      "(default: none: no key asked for)");
  app.add_option("--api-key-file", key_file_,
                 "The key from the first line of a file (kept out of the process list; default: none)")
      ->excludes(key_);
  app.add_flag("--insecure", insecure_, "Allow a non-loopback --host without an API key");
  slots_ = app.add_option("--slots", scheduler.slots,
                          "Requests generated together, sharing each weight pass (default 4; with a preset, fewer "
                          "when 4 do not fit)")
               ->check(cli::in_range(1, 256));
  app.add_option("--queue", scheduler.queue_limit,
                 "Requests that may wait beyond the free slots; more get 429 (default 64)")
      ->check(cli::in_range(0, 4096));
  app.add_option("--thinking", thinking_,
                 "Whether a chat request that does not say (no reasoning_effort or chat_template_kwargs) thinks "
                 "first: on or off (default off: the reply's content starts at once)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--effort", server.effort,
                 "The thinking effort of a request that thinks without naming one: low, high (default) or max")
      ->check(CLI::IsMember({"low", "high", "max"}));
  model_name_ = app.add_option("--model-name", server.model_name,
                               "The model's id in the API (default: the model directory's name)");
  CLI::Option* spill = app.add_option("--cache-dir", cache.dir,
                                      "Directory for conversation states past --keep-mb: each written there when "
                                      "kept, removed at exit (default: none, dropped)");
  app.add_option("--prompt-cache", prompt_cache_,
                 "Directory that keeps conversation states across restarts (created 0700 if missing; refused when "
                 "a link, another user's, or writable by others): a restarted server continues a prompt from them "
                 "(default: none)")
      ->excludes(spill);
  app.add_option("--prompt-cache-mb", prompt_cache_mb_,
                 "The most --prompt-cache's files may hold in MB; the least recently used go first (default 8192)")
      ->check(cli::in_range(0.001, 1e9));
  app.add_option("--system-keep-min", server.system_keep_min,
                 "Fewest ids a chat's system prompt and tool list need to be kept as a state of their own, which a "
                 "new conversation sharing them continues from (and, with --prompt-cache, a restarted server); 0: "
                 "never (default 256)")
      ->check(cli::in_range(0, 1 << 30));
  keep_ = app.add_option("--keep-mb", keep_mb_,
                         "RAM for kept conversation states in MB, those still being written to --cache-dir or "
                         "--prompt-cache included (default 512; with a preset, less when that does not fit)")
              ->check(cli::in_range(0, 1e7));
  app.add_option("--max-body-mb", max_body_mb_,
                 "Largest request body in MB, Content-Length or chunked (default 8; larger: 413)")
      ->check(cli::in_range(0.001, 1024));
  app.add_option("--allowed-hosts", server.guard.allowed_hosts,
                 "Host names besides the loopback ones and --host that requests may name in their Host header "
                 "(comma-separated; * for any). Others get 403: a DNS-rebinding page cannot reach the server "
                 "(default: none: the loopback names and --host only)")
      ->delimiter(',');
  app.add_option("--cors-origin", server.guard.cors_origins,
                 "Origins (https://app.example) whose pages may call the API, answered with CORS headers "
                 "(comma-separated; * for any). Other pages' requests get 403 (default: none: no page's)")
      ->delimiter(',');
  app.add_option("--read-timeout", server.read_timeout_seconds,
                 "Seconds a request may take to arrive, from its first byte to its last (default 30; its headers: "
                 "10 at most); a slower one gets 408")
      ->check(cli::in_range(1, 3600));
  app.add_option("--hosted-tools", hosted_tools_,
                 "What /v1/responses does with a hosted tool it cannot run (web_search and the like, as Codex "
                 "declares): refuse (default) answers 400 naming it; omit leaves it out of the prompt and lists it "
                 "in the response's omitted_tools")
      ->check(CLI::IsMember({"refuse", "omit"}));
}

void ServeFlags::default_context(ModelOptions& mo) {
  if (mo.ctx == 0) mo.ctx = kDefaultContext;
}

void ServeFlags::apply(ModelOptions& mo) {
  if (!key_file_.empty()) server.api_key = serve::read_api_key_file(key_file_);  // checked as it is read
  if (key_->count()) serve::check_api_key(server.api_key, "--api-key");
  if (!serve::is_loopback_host(server.host) && server.api_key.empty() && !insecure_)
    throw Error(ExitCode::kUsage, "--host " + server.host +
                                      " is reachable from other machines: give --api-key "
                                      "(or --api-key-file), or --insecure to serve without one");
  if (!cache.dir.empty() && !std::filesystem::is_directory(cache.dir))
    throw Error(ExitCode::kUsage, "--cache-dir " + cache.dir + ": not a directory (create it first)");
  if (!prompt_cache_.empty()) {
    serve::check_prompt_cache_dir(prompt_cache_, "--prompt-cache " + prompt_cache_);
    cache.dir = prompt_cache_;
    cache.persistent = true;
    cache.disk_bytes = static_cast<uint64_t>(prompt_cache_mb_ * 1e6);
  }
  if (model_name_->count() && server.model_name.find_first_not_of(" \t") == std::string::npos)
    throw Error(ExitCode::kUsage,
                "--model-name is empty: give the name clients send as \"model\", or leave the flag out");
  for (const std::string& origin : server.guard.cors_origins)
    if (origin != "*" && (origin.find("://") == std::string::npos || origin.back() == '/'))
      throw Error(ExitCode::kUsage,
                  "--cors-origin " + origin + ": not an origin (scheme://host[:port], no path; or * for any)");
  server.guard.host = server.host;
  server.thinking = thinking_ == "on";
  server.omit_hosted_tools = hosted_tools_ == "omit";
  cache.ram_bytes = static_cast<uint64_t>(keep_mb_ * 1e6);
  server.max_body_bytes = static_cast<size_t>(max_body_mb_ * 1e6);
  default_context(mo);
  server.context = static_cast<int64_t>(mo.ctx);
  server.http_threads = scheduler.slots + scheduler.queue_limit + 8;
  const std::filesystem::path dir(mo.model_dir);
  if (server.model_name.empty()) server.model_name = dir.lexically_normal().filename().string();
  if (server.model_name.empty()) server.model_name = std::filesystem::absolute(dir).parent_path().filename().string();
  add_to_plan(mo.stream);
}

void ServeFlags::add_to_plan(RunRequest& request) const {
  request.sequences = scheduler.slots;  // the plan holds a sequence state of --ctx positions per slot
  // and the kept conversation states, those on their way to --prompt-cache or --cache-dir among them
  // (serve/conversation_cache.h)
  request.kept_state_bytes = static_cast<uint64_t>(keep_mb_ * 1e6);
  // A prompt pass may be stopped (a client that leaves) with every sequence
  // in it put back: a KDA state per slot to put back.
  request.stoppable_passes = true;
}

void ServeFlags::fit(const ModelConfig& config, const Checkpoint& checkpoint, ModelOptions& mo, bool ctx_given) {
  ServeShape shape;
  shape.slots = scheduler.slots;
  shape.keep_bytes = cache.ram_bytes;
  shape.context = mo.ctx;
  shape.slots_given = slots_->count() > 0;
  shape.keep_given = keep_->count() > 0;
  shape.context_given = ctx_given;
  const std::string said = fit_serve_shape(config, checkpoint, mo, read_memory_limits(), shape);
  if (said.empty()) return;
  std::fprintf(stderr, "k3-serve: %s\n", said.c_str());
  scheduler.slots = shape.slots;
  keep_mb_ = static_cast<double>(shape.keep_bytes) / 1e6;
  cache.ram_bytes = shape.keep_bytes;
  mo.ctx = shape.context;
  server.context = static_cast<int64_t>(mo.ctx);
  server.http_threads = scheduler.slots + scheduler.queue_limit + 8;
  add_to_plan(mo.stream);
}

}  // namespace k3
