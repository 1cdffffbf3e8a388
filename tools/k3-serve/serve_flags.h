// k3-serve's own flags: where it listens and who may ask (--host, --port,
// --api-key, --api-key-file, --insecure), how many requests share a weight
// pass (--slots, --queue), what a chat request that does not say gets
// (--thinking, --effort), the model's name in the API, where kept
// conversation states go (--cache-dir, --keep-mb, --prompt-cache,
// --prompt-cache-mb, --system-keep-min), the largest body, who
// may call it from a browser (--allowed-hosts, --cors-origin) and how long a
// request may take to arrive (--read-timeout).
// Declared here, as k3-forward's and k3-chat's are, so the tool's main stays
// a list of steps.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "checkpoint/checkpoint.h"
#include "cli/model_options.h"
#include "serve/conversation_cache.h"
#include "serve/http_server.h"
#include "serve/slot_scheduler.h"

namespace k3 {

struct ServeFlags {
  // The context each request may use when --ctx is not given.
  static constexpr uint64_t kDefaultContext = 8192;
  serve::ServerOptions server{.effort = "high"};
  serve::SchedulerOptions scheduler;
  serve::CacheOptions cache;

  void add_to(CLI::App& app);
  // Before --list-presets and --plan: the context the server will hold
  // (--ctx, default kDefaultContext), so their figures are the server's.
  static void default_context(ModelOptions& mo);
  // Once parsed: reads --api-key-file, refuses an empty key and a host other
  // machines reach without one (unless --insecure), a --cache-dir that is
  // not a directory and a --prompt-cache that is not safe (all kUsage); sets the sizes, the context (--ctx, default
  // 8192), the model's name (default: the model directory's) and what the
  // memory plan holds per slot and for the kept states.
  void apply(ModelOptions& mo);
  // What the memory plan holds for the server: a sequence state per slot,
  // a KDA state per slot to put back a stopped prompt pass, the kept
  // conversation states (--keep-mb) and those on their way to disk.
  void add_to_plan(RunRequest& request) const;
  // After apply, with a preset and a packed trunk: --slots, --keep-mb and
  // --ctx sized for the memory available where not given (tools/k3-serve/serve_fit.h),
  // saying on stderr what was chosen; refuses (kResource) with the flags
  // that fit. `ctx_given`: --ctx was on the command line.
  void fit(const ModelConfig& config, const Checkpoint& checkpoint, ModelOptions& mo, bool ctx_given);

 private:
  CLI::Option* key_ = nullptr;
  CLI::Option* model_name_ = nullptr;
  CLI::Option* slots_ = nullptr;
  CLI::Option* keep_ = nullptr;
  std::string key_file_, prompt_cache_;
  std::string thinking_ = "off";
  std::string hosted_tools_ = "refuse";
  bool insecure_ = false;
  double keep_mb_ = 512, max_body_mb_ = 8, prompt_cache_mb_ = 8192;
};

}  // namespace k3
