// k3-forward: token ids on stdin -> the Kimi-K3 forward pass -> generated ids.
//
// Reads the prompt ids, runs them as one batch (prefill), then generates
// greedily one token at a time with the carried sequence state, writing each
// id on its own line as soon as it exists so `| k3-detok` streams.
// --recompute re-runs the whole prefix for every new token instead (the slow
// reference path; the ids are the same). Sampling flags choose ids by
// lib/sampling; --state-in/--state-out continue a saved conversation
// (lib/state/continuation.h).
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <memory>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/safetensors.h"
#include "common/atomic_file_writer.h"
#include "cli/cli_parse.h"
#include "cli/flag_checks.h"
#include "common/error.h"
#include "common/file.h"
#include "common/tool_main.h"
#include "kernels/thread_pool.h"
#include "model/config.h"
#include "model/engine.h"
#include "model/resident_weights.h"
#include "model/tensor_manifest.h"
#include "model/token_id_input.h"
#include "model/tokenizer_match.h"
#include "runtime/streaming_setup.h"
#include "runtime/streaming_weights.h"
#include "sampling/sampler.h"
#include "sampling/stop_conditions.h"
#include "state/continuation.h"

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_interrupted{false};
void on_signal(int) { g_interrupted = true; }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void emit_id(int32_t id) {
  if (std::printf("%d\n", id) < 0 || std::fflush(stdout) != 0)
    throw k3::Error(k3::ExitCode::kIo, std::string("cannot write to stdout: ") + std::strerror(errno));
}

// Logits of every evaluated position, one row each, in evaluation order.
class LogitsLog {
 public:
  LogitsLog(bool enabled, size_t vocab) : enabled_(enabled), vocab_(vocab) {}
  bool enabled() const { return enabled_; }
  void add(const float* rows, size_t n) {
    if (enabled_) data_.insert(data_.end(), rows, rows + n * vocab_);
  }
  void write(const std::string& path) const {
    const uint64_t rows = data_.size() / vocab_;
    const uint64_t nbytes = data_.size() * sizeof(float);
    const std::string header =
        k3::make_safetensors_header({{"logits", k3::DType::kF32, {rows, static_cast<uint64_t>(vocab_)}, nbytes}});
    k3::AtomicFileWriter out(path);
    out.write(header.data(), header.size());
    out.write(data_.data(), nbytes);
    out.commit();
  }

 private:
  bool enabled_;
  size_t vocab_;
  std::vector<float> data_;
};

long peak_rss_mb() {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
  return ru.ru_maxrss / 1024;  // kilobytes on Linux
}

int run(int argc, char** argv) {
  CLI::App app{
      "Runs Kimi-K3 on token ids: reads whitespace-separated decimal ids on stdin (or --ids FILE), runs the\n"
      "prompt as one batch, then generates --gen tokens greedily, writing each id on its own line as soon as\n"
      "it exists. Generation stops early at an EOS id of the model (unless --ignore-eos) or a --stop-id; that id\n"
      "is written. --temp > 0 samples instead (documented, seeded, identical on every machine). --state-out saves\n"
      "the conversation; --state-in continues it: ids on stdin are appended to the saved context.\n"
      "Example: k3-tokenize --tok ~/k3model < prompt.txt | k3-forward ~/k3model --gen 64 | k3-detok --tok ~/k3model",
      "k3-forward"};
  std::string model_dir, ids_file, logits_file, state_in, state_out;
  double temp = 0, top_p = 1, min_p = 0;
  int32_t top_k = 0;
  uint64_t seed = 0;
  std::vector<int32_t> stop_ids;
  int gen = 0, threads = 0;
  bool ignore_eos = false, recompute = false, teacher_forcing = false;
  app.add_option("MODEL_DIR", model_dir, "Model directory: config.json, model.safetensors.index.json and shards")
      ->required();
  std::string tok_dir;
  app.add_option("--tok", tok_dir,
                 "Tokenizer directory the ids come from: refuse to run when its vocabulary or special tokens "
                 "disagree with the model's config");
  app.add_option("--ids", ids_file, "Read the prompt ids from FILE instead of stdin (- is stdin; pipes are read to the end)");
  app.add_option("--gen", gen, "Generate up to N tokens after the prompt (default 0: only run the prompt)")
      ->check(k3::cli::non_negative());
  app.add_flag("--ignore-eos", ignore_eos, "Keep generating past an EOS id");
  app.add_flag("--recompute", recompute,
               "Recompute the whole prefix for every new token (slow reference path; same ids)");
  app.add_option("--logits", logits_file,
                 "Write the logits of every evaluated position to FILE (safetensors, tensor 'logits' F32 "
                 "[positions, vocab]; written atomically)");
  app.add_flag("--teacher-forcing", teacher_forcing,
               "Evaluate the given ids without generating; writes the argmax id of every position to stdout");
  app.add_option("--threads", threads, "Worker threads (default 0: all cores); output is identical for any count")
      ->check(k3::cli::non_negative());
  CLI::Option* o_temp =
      app.add_option("--temp", temp, "Sampling temperature (default 0: greedy, ties to the lower id)");
  CLI::Option* o_top_k = app.add_option("--top-k", top_k, "Sample among the K most likely ids (default 0: off)");
  CLI::Option* o_top_p = app.add_option(
      "--top-p", top_p, "Sample among the most likely ids whose probabilities sum to P (default 1: off)");
  CLI::Option* o_min_p = app.add_option(
      "--min-p", min_p, "Drop ids less likely than M times the most likely one (default 0: off)");
  CLI::Option* o_seed = app.add_option(
      "--seed", seed, "Random seed for sampling (default 0); a seed gives the same ids on every machine");
  app.add_option("--stop-id", stop_ids, "Stop generating after this id (repeatable)")->allow_extra_args(false);
  app.add_option("--state-in", state_in,
                 "Continue the conversation saved in FILE: the ids on stdin are appended to the saved context "
                 "(sampling flags not given keep the saved settings)");
  // Memory budgets and streaming (README "Memory budgets and streaming").
  k3::StreamingRequest stream_req;
  std::string stats_json_file;
  bool list_presets = false;
  bool plan_only = false;
  uint64_t ctx = 0;
  app.add_option("--trunk", stream_req.trunk_dir,
                 "Packed trunk from k3-pack: pin --trunk-gb of it in RAM and stream the rest every token");
  app.add_option("--trunk-gb", stream_req.trunk_gb, "GB (1e9 bytes) of trunk layers to pin in RAM (needs --trunk)")
      ->check(k3::cli::non_negative());
  app.add_option("--cache-gb", stream_req.cache_gb, "GB of routed-expert LRU cache (experts stream from the shards)")
      ->check(k3::cli::non_negative());
  app.add_option("--preset", stream_req.preset,
                 "Memory preset: laptop, desktop, workstation, server, max (--trunk-gb/--cache-gb override it)");
  app.add_flag("--list-presets", list_presets, "Print each preset's forecast peak RSS for this model, then exit");
  app.add_flag("--plan", plan_only,
               "Print the memory plan for these budget flags and --ctx (default 4096), then exit: 0 when it fits, "
               "6 when it would be refused. Reads no prompt and no weights");
  app.add_option("--ctx", ctx, "Context positions to plan the MLA latent cache for (default: context + --gen)");
  app.add_option("--io-threads", stream_req.io_threads, "Parallel reads in flight when streaming (default 8)")
      ->check(k3::cli::positive_integer());
  app.add_option("--stats-json", stats_json_file, "Write the streaming counters to FILE (JSON, written atomically)");
  app.add_option("--state-out", state_out,
                 "Save the conversation to FILE after the run (written atomically; also when interrupted)");
  app.footer(k3::exit_codes_help());
  if (auto status = k3::parse_command_line(app, argc, argv, "k3-forward")) return *status;
  if (teacher_forcing && gen > 0)
    throw k3::Error(k3::ExitCode::kUsage, "--teacher-forcing evaluates the given ids and cannot be combined with --gen");

  // Cheap checks first: config and input, before any weight is read.
  const k3::ModelConfig config = k3::load_model_config(model_dir);
  if (!tok_dir.empty()) k3::check_tokenizer_matches(config, model_dir, k3::Vocabulary::load(tok_dir), tok_dir);
  stream_req.compute_threads = threads;
  if (list_presets) {
    const k3::Checkpoint checkpoint = k3::Checkpoint::open(model_dir);
    stream_req.context = ctx ? ctx : 4096;
    std::fputs(k3::presets_table(config, checkpoint, stream_req).c_str(), stdout);
    return 0;
  }
  if (plan_only) {
    if (!stream_req.active())
      throw k3::Error(k3::ExitCode::kUsage, "--plan shows a streaming plan: give --trunk, --preset or a budget");
    const k3::Checkpoint checkpoint = k3::Checkpoint::open(model_dir);
    stream_req.context = ctx ? ctx : 4096;
    stream_req.batch = 256;  // the largest prefill batch: the plan holds for any prompt
    k3::prepare_streaming(config, checkpoint, stream_req, std::cerr);  // throws kResource when refused
    std::fprintf(stderr, "k3-forward: the plan fits; a run with these flags would start\n");
    return 0;
  }
  const size_t vocab = static_cast<size_t>(config.vocab_size);
  std::string text;
  std::string origin = "stdin";
  if (!ids_file.empty() && ids_file != "-") {
    text = k3::read_input(ids_file, "ids file");
    origin = ids_file;
  } else {
    text = k3::read_all(0, "stdin");
  }
  const std::vector<int32_t> prompt = k3::parse_token_ids(text, origin, config.vocab_size);
  if (prompt.empty() && state_in.empty())
    throw k3::Error(k3::ExitCode::kBadInput,
                    origin + ": no token ids (the prompt is empty; pipe ids from k3-tokenize or pass --ids FILE)");
  for (int32_t id : stop_ids)
    if (id < 0 || id >= config.vocab_size)
      throw k3::Error(k3::ExitCode::kUsage, "--stop-id " + std::to_string(id) + " is outside the vocabulary 0.." +
                                                std::to_string(config.vocab_size - 1));

  const k3::Checkpoint checkpoint = k3::Checkpoint::open(model_dir);
  // A saved conversation is checked before any weight is read.
  std::optional<k3::ModelIdentity> identity;
  std::optional<k3::ConversationState> saved;
  if (!state_in.empty() || !state_out.empty()) identity = k3::ModelIdentity::of(config, checkpoint);
  if (!state_out.empty()) k3::check_output_directory(state_out);
  if (!state_in.empty()) saved = k3::load_conversation(state_in, *identity);
  k3::SamplingOverrides flags;
  if (o_temp->count()) flags.temperature = temp;
  if (o_top_k->count()) flags.top_k = top_k;
  if (o_top_p->count()) flags.top_p = top_p;
  if (o_min_p->count()) flags.min_p = min_p;
  if (o_seed->count()) flags.seed = seed;
  const k3::SamplingParams sampling =
      k3::resolve_sampling(saved ? saved->sampling : std::optional<k3::SamplingParams>{}, flags);
  // Evaluated first: ids the saved run emitted but did not evaluate, then the new ones.
  std::vector<int32_t> input = saved ? saved->pending : std::vector<int32_t>{};
  input.insert(input.end(), prompt.begin(), prompt.end());
  if (input.empty() && (saved->last_logits.empty() || teacher_forcing))
    throw k3::Error(k3::ExitCode::kBadInput, origin + ": no token ids, and " + state_in +
                                                 " has nothing left to evaluate; give the ids to continue with");
  // Without any budget flag everything is held resident (ResidentWeights says
  // how much); with one, the plan is printed and checked before allocating.
  std::unique_ptr<k3::ResidentWeights> resident;
  std::unique_ptr<k3::StreamingWeights> streaming;
  k3::RunFigures figures;
  if (stream_req.active()) {
    const uint64_t past = saved ? static_cast<uint64_t>(saved->sequence.positions) : 0;
    stream_req.context = std::max<uint64_t>(ctx, past + input.size() + static_cast<uint64_t>(gen));
    stream_req.batch = std::clamp<uint64_t>(input.size(), 1, 256);
    k3::validate_checkpoint(config, checkpoint);
    k3::PreparedStream prepared = k3::prepare_streaming(config, checkpoint, stream_req, std::cerr);
    figures.forecast_peak_rss = prepared.plan.peak_rss;
    streaming = std::make_unique<k3::StreamingWeights>(config, checkpoint, stream_req.trunk_dir,
                                                       std::move(prepared.layout), prepared.plan,
                                                       stream_req.io_threads);
  } else {
    std::fprintf(stderr,
                 "k3-forward: no --trunk or budget: the whole model (trunk and every routed expert) is loaded "
                 "resident; use k3-pack and --trunk/--preset to run in a memory budget\n");
    resident = std::make_unique<k3::ResidentWeights>(config, checkpoint, &std::cerr);
  }
  k3::WeightSource& weights = streaming ? static_cast<k3::WeightSource&>(*streaming) : *resident;
  k3::ThreadPool pool(threads);
  k3::Engine engine(config, weights, pool);
  if (streaming) figures.at_start = streaming->stats();

  ::signal(SIGPIPE, SIG_IGN);  // a closed pipe becomes a write error, reported as such
  ::signal(SIGINT, on_signal);
  ::signal(SIGTERM, on_signal);

  k3::SequenceState state;
  if (saved)
    state = std::move(saved->sequence);
  else
    engine.reset(state);
  LogitsLog log(!logits_file.empty(), vocab);
  const k3::StopConditions stop(config.eos_token_ids, stop_ids, ignore_eos);
  k3::Sampler sampler(sampling);

  // Prompt, with progress lines on stderr when it takes a while.
  const auto t_prompt = Clock::now();
  const bool tty = ::isatty(2);
  auto last_report = t_prompt;
  bool reported = false;
  engine.set_progress([&](int64_t done, int64_t total) {
    if (g_interrupted)
      throw k3::Error(k3::ExitCode::kInterrupted, "interrupted while running the prompt; nothing was generated");
    const auto now = Clock::now();
    if (std::chrono::duration<double>(now - last_report).count() < 2.0) return;
    last_report = now;
    reported = true;
    const double s = seconds_since(t_prompt);
    const double eta = s / static_cast<double>(done) * static_cast<double>(total - done);
    std::fprintf(stderr, "%sk3-forward: prompt %lld/%lld layer steps, %.0f s elapsed, ETA %.0f s%s",
                 tty ? "\r" : "", static_cast<long long>(done), static_cast<long long>(total), s, eta,
                 tty ? "" : "\n");
  });
  const bool all_rows = log.enabled() || teacher_forcing;
  std::vector<float> logits((all_rows ? input.size() : 1) * vocab);
  std::vector<float> row;
  if (input.empty()) {
    row = saved->last_logits;  // nothing new: generate from where the saved run stopped
  } else {
    engine.forward(state, input, all_rows ? k3::LogitRows::kAll : k3::LogitRows::kLast, logits.data());
    log.add(logits.data(), all_rows ? input.size() : 0);
    const float* last = logits.data() + (all_rows ? (input.size() - 1) * vocab : 0);
    row.assign(last, last + vocab);
  }
  const double prompt_s = seconds_since(t_prompt);
  if (streaming) figures.after_prefill = streaming->stats();
  engine.set_progress(nullptr);
  if (reported && tty) std::fprintf(stderr, "\n");

  int generated = 0;
  std::vector<int32_t> pending;
  const auto t_gen = Clock::now();
  if (teacher_forcing) {
    for (size_t t = 0; t < input.size(); ++t) emit_id(k3::greedy_token(logits.data() + t * vocab, config.vocab_size));
  } else {
    std::vector<int32_t> sequence = state.tokens;  // the whole history, for --recompute
    while (generated < gen && !g_interrupted) {
      // The draw is tied to the position the id will occupy (sample_rng.h),
      // so split and continued runs choose what one run would.
      const int32_t id = sampler.next(row.data(), config.vocab_size, state.positions);
      emit_id(id);
      ++generated;
      sequence.push_back(id);
      if (stop.stops(id) || generated == gen) {
        pending.push_back(id);  // emitted, not evaluated: a continuation evaluates it first
        break;
      }
      if (recompute) {
        engine.reset(state);
        engine.forward(state, sequence, k3::LogitRows::kLast, row.data());
      } else {
        engine.forward(state, std::span<const int32_t>(&id, 1), k3::LogitRows::kLast, row.data());
        ++figures.decode_steps;
      }
      log.add(row.data(), 1);
    }
  }
  const double gen_s = seconds_since(t_gen);
  if (streaming) {
    figures.at_end = streaming->stats();
    figures.prompt_tokens = input.size();
    figures.prefill_seconds = prompt_s;
    figures.decode_seconds = gen_s;
    figures.peak_rss_bytes = static_cast<uint64_t>(std::max(0L, peak_rss_mb())) << 20;
    figures.direct_io = streaming->direct_io();
    std::fputs(k3::figures_text(figures).c_str(), stderr);
    if (!stats_json_file.empty()) {
      const std::string j = k3::figures_json(figures);
      k3::write_file_atomic(stats_json_file, j.data(), j.size());
    }
  }

  if (log.enabled()) log.write(logits_file);
  if (!state_out.empty()) k3::save_conversation(state_out, *identity, std::move(state), pending, sampling, row);
  std::fprintf(stderr,
               "k3-forward: %zu prompt tokens in %.3f s (%.1f tokens/s); %d generated, %.4f s/token; %d threads; "
               "peak RSS %ld MB\n",
               input.size(), prompt_s, prompt_s > 0 ? input.size() / prompt_s : 0.0, generated,
               generated > 1 ? gen_s / (generated - 1) : 0.0, pool.size(), peak_rss_mb());
  if (g_interrupted) {
    std::fprintf(stderr, "k3-forward: interrupted after %d generated tokens (they were written)\n", generated);
    return static_cast<int>(k3::ExitCode::kInterrupted);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return k3::run_tool("k3-forward", [&] { return run(argc, argv); });
}
