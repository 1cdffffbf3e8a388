// k3-serve: Kimi-K3 behind OpenAI's and Anthropic's HTTP APIs, for the agents, editors and
// chat pages people already use. The model is loaded once; requests share
// weight passes (up to --slots at once) and a conversation's next request
// continues from its kept state. lib/serve holds the server; this file reads
// the flags, loads the model and wires them (docs/serve.md).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "chat/chat_session.h"
#include "checkpoint/checkpoint.h"
#include "cli/cli_parse.h"
#include "cli/draft_options.h"
#include "cli/interrupt.h"
#include "cli/load_progress.h"
#include "cli/model_options.h"
#include "cli/model_run.h"
#include "cli/state_identity.h"
#include "common/error.h"
#include "common/rate_format.h"
#include "common/tool_main.h"
#include "model/tokenizer_match.h"
#include "serve/bearer_auth.h"
#include "serve/conversation_cache.h"
#include "serve/http_server.h"
#include "serve/slot_scheduler.h"
#include "serve/stop_signal.h"
#include "serve_flags.h"
#include "state/continuation.h"
#include "tokenizer/tokenizer.h"

namespace {

constexpr const char* kTool = "k3-serve";
std::atomic<k3::serve::SlotScheduler*> live{nullptr};  // set once serving: what a stop signal shuts down

int run(int argc, char** argv) {
  CLI::App app{
      "Serves Kimi-K3 over OpenAI's API (chat completions, completions, responses, streaming, tool calls) and\n"
      "Anthropic's Messages API (/v1/messages) on this machine: point an OpenAI client, agent or editor\n"
      "at http://127.0.0.1:8080/v1, Claude Code or an Anthropic client at http://127.0.0.1:8080\n"
      "(ANTHROPIC_BASE_URL), or a browser at http://127.0.0.1:8080/ for its chat page. The model is loaded once; up to "
      "--slots requests share each weight pass;\n"
      "a conversation's next request continues from its kept state (with --prompt-cache, after a restart too).\n"
      "Stop it with Ctrl-C or SIGTERM (streams in flight end cleanly). See docs/serve.md.",
      kTool};
  k3::ModelOptions mo;
  k3::ServeFlags f;
  k3::add_model_options(app, mo);
  f.add_to(app);
  k3::DraftFlags draft;
  draft.add_to(app);
  k3::add_budget_options(
      app, mo, false,
      {"Context positions each request may reach (default: with a preset and a packed trunk, the largest power of two "
       "that fits, at most 131072; otherwise 8192)",
       "Print the server's memory plan (--slots sequences of --ctx positions and --keep-mb of kept states, sized to "
       "fit by a preset), then exit: 0 when it fits, 6 when it would be refused. Reads no weights"});
  app.footer(std::string("Exit status 2 for a refused flag or an address it cannot listen on; 130 after Ctrl-C or "
                         "SIGTERM.\n") +
             k3::exit_codes_help());
  if (auto status = k3::parse_command_line(app, argc, argv, kTool)) return *status;
  // What the server adds to every plan: the draft model and its rollback
  // copies (a draft that does not fit the model: exit 3), the slots and --keep-mb.
  const auto run_flags = [&](const k3::ModelConfig& c, k3::RunRequest& s) {
    draft.check(c, s);
    s.state_snapshots = draft.max_drafts();
    f.add_to_plan(s);
  };
  const bool ctx_given = mo.ctx != 0;
  k3::ServeFlags::default_context(mo);  // what --list-presets and --plan count is what the server holds
  if (auto status = k3::apply_early_options(mo, run_flags)) return *status;
  f.apply(mo);
  const k3::ModelConfig config = k3::load_model_config(mo.model_dir);
  run_flags(config, mo.stream);
  k3::Checkpoint checkpoint = k3::Checkpoint::open(mo.model_dir);
  f.fit(config, checkpoint, mo, ctx_given);  // a preset's slots, kept states and context, sized to fit
  if (auto status = k3::answer_plan_requests(config, mo, kTool)) return *status;
  const k3::Tokenizer tok = k3::Tokenizer::load(mo.model_dir);
  k3::check_tokenizer_covers(config, mo.model_dir, tok.vocab(), mo.model_dir);  // before any weight is read
  k3::serve::StopSignal::block();  // before --gpu's device opens: its driver's threads inherit the mask
  // Planned once, refused before listening; the model loads from this plan.
  std::string plan_text;
  k3::ModelPlan plan = k3::plan_model(config, checkpoint, mo, static_cast<uint64_t>(f.server.context), 256, plan_text);

  // Listen first: /health says "loading" while the weights load.
  k3::ignore_sigpipe();
  k3::serve::ServeMetrics metrics;
  k3::serve::HttpServer http(f.server, metrics);
  http.bind();
  std::fputs(plan_text.c_str(), stderr);  // the port is ours: the plan, then the address
  http.start();
  std::fprintf(stderr, "%s: listening on http://%s:%d/v1 (model \"%s\", loading)\n", kTool, f.server.host.c_str(),
               http.bound_port(), f.server.model_name.c_str());
  // SIGINT/SIGTERM: while loading, the process ends (nothing is written yet);
  // once serving, new work is refused and streams in flight end cleanly.
  std::thread([] {
    const int sig = k3::serve::StopSignal::wait();
    std::fprintf(stderr, "%s: stopping (signal %d)\n", kTool, sig);
    if (k3::serve::SlotScheduler* s = live.load()) return s->shutdown();
    std::_Exit(static_cast<int>(k3::ExitCode::kInterrupted));
  }).detach();

  std::unique_ptr<k3::Model> model = k3::load_model(
      config, std::move(checkpoint), mo, static_cast<uint64_t>(f.server.context), 256,
      [&](const char* what, uint64_t done, uint64_t total) { http.load_status().update(what, done, total); },
      std::move(plan));
  // Only spilled states (--cache-dir) need the weights' fingerprint; reading
  // it for a checkpoint no manifest vouches for is a pass over every shard.
  k3::LoadProgress fingerprinting(kTool);
  const auto report = [&](const char* what, uint64_t done, uint64_t total) {
    fingerprinting(what, done, total);
    http.load_status().update(what, done, total);
  };
  k3::serve::ConversationCache cache(f.cache.dir.empty()
                                         ? k3::in_memory_model_identity(model->config())
                                         : k3::state_model_identity(model->config(), model->checkpoint(), report),
                                     f.cache);
  f.scheduler.draft = draft.start_serving(*model);
  f.scheduler.max_drafts = std::min(draft.max_drafts(), model->max_drafts());
  metrics.draft = f.scheduler.draft != nullptr;
  k3::serve::SlotScheduler scheduler(*model, cache, metrics, f.scheduler);
  http.set_backend({&tok, config.eos_token_ids, k3::chat_stop_ids(tok.vocab(), config.eos_token_ids), &scheduler});
  live = &scheduler;
  std::fprintf(stderr, "%s: ready: %zu slots, context %lld positions\n", kTool, f.scheduler.slots,
               static_cast<long long>(f.server.context));
  scheduler.run();  // this thread owns the engine until shutdown()
  live = nullptr;
  http.stop();          // handlers of ended streams finish their last chunks first
  draft.finish(kTool);  // --draft-log and the draft's summary line
  const uint64_t generated = metrics.generated_tokens.load();
  const double decode_seconds = static_cast<double>(metrics.decode_nanoseconds.load()) * 1e-9;
  std::fprintf(stderr, "%s: stopped: %llu tokens generated (%s)\n", kTool, static_cast<unsigned long long>(generated),
               k3::seconds_per_token(decode_seconds, static_cast<int64_t>(generated)).c_str());
  k3::report_device(*model, mo);
  return static_cast<int>(k3::ExitCode::kInterrupted);
}

}  // namespace

int main(int argc, char** argv) {
  return k3::run_tool(kTool, [&] { return run(argc, argv); });
}
