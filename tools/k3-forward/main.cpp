// k3-forward: token ids on stdin -> the Kimi-K3 forward pass -> generated ids.
//
// A thin front end over the generation session (lib/generate): the prompt
// runs as one batch (prefill), then ids are generated one at a time with the
// carried sequence state, each written on its own line as soon as it exists
// so `| k3-detok` streams. --recompute re-runs the whole prefix for every new
// token instead (the slow reference path; the ids are the same). Sampling
// flags choose ids by lib/sampling; --state-in/--state-out continue a saved
// conversation (lib/state/continuation.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "batch_run.h"
#include "checkpoint/checkpoint.h"
#include "cli/cli_parse.h"
#include "cli/flag_checks.h"
#include "cli/interrupt.h"
#include "cli/model_options.h"
#include "cli/model_run.h"
#include "cli/sampling_options.h"
#include "cli/speculation_options.h"
#include "cli/state_identity.h"
#include "cli/token_id_reader.h"
#include "common/atomic_file_writer.h"
#include "common/error.h"
#include "common/file.h"
#include "common/tool_main.h"
#include "engine/session.h"
#include "forward_flags.h"
#include "kernels/compute_backend.h"
#include "model/tokenizer_match.h"
#include "prompt_and_generate.h"
#include "state/continuation.h"

namespace {

constexpr const char* kTool = "k3-forward";

int run(int argc, char** argv) {
  CLI::App app{
      "Runs Kimi-K3 on token ids: reads whitespace-separated decimal ids on stdin (or --ids FILE), runs the\n"
      "prompt as one batch, then generates --gen tokens greedily, writing each id on its own line as soon as\n"
      "it exists. Generation stops early at an EOS id of the model (unless --ignore-eos) or a --stop-id; that id\n"
      "is written. --temp > 0 samples instead (documented, seeded, identical on every machine). --state-out saves\n"
      "the conversation; --state-in continues it: ids on stdin are appended to the saved context.\n"
      "Example: k3-tokenize --tok ~/k3model < prompt.txt | k3-forward ~/k3model --gen 64 | k3-detok --tok ~/k3model",
      kTool};
  k3::ModelOptions mo;
  k3::ForwardFlags f;
  k3::SamplingFlags sampling_flags;
  k3::SpeculationFlags spec_flags;
  k3::add_model_options(app, mo);
  f.add_run_flags(app);
  sampling_flags.add_to(app);
  k3::GenerationExtras extras;  // --stop, --logprobs
  extras.add_to(app);
  spec_flags.add_to(app);
  f.add_state_flags(app);
  k3::add_budget_options(app, mo, /*expert_trace=*/true);
  app.footer(k3::exit_codes_help());
  if (auto status = k3::parse_command_line(app, argc, argv, kTool)) return *status;
  // --list-presets counts --spec's rollback copies and the --draft model.
  const auto run_flags = [&](const k3::ModelConfig& c, k3::RunRequest& s) { spec_flags.check(c, s); };
  if (auto status = k3::apply_early_options(mo, run_flags)) return *status;
  f.check(spec_flags.requested());
  if (mo.stream.gpu_device >= 0 && !f.batch_file.empty())
    throw k3::Error(k3::ExitCode::kUsage, "--gpu runs a prompt's chunks; --batch decodes on the CPU: drop one");

  // Cheap checks first: config and input, before any weight is read.
  if (!mo.stats_json.empty()) k3::check_output_path(mo.stats_json, k3::OutputPolicy::kFileOrStream);
  const k3::ModelConfig config = k3::load_model_config(mo.model_dir);
  if (!f.tok_dir.empty()) k3::check_tokenizer_matches(config, mo.model_dir, k3::Vocabulary::load(f.tok_dir), f.tok_dir);
  spec_flags.check(config, mo.stream);  // rollback copies, the draft's memory; a --draft that does not fit: exit 3
  if (!f.state_out.empty()) ++mo.stream.state_snapshots;  // Ctrl-C's undo copy
  k3::check_stop_ids(f.stop_ids, config.vocab_size);
  const std::string tok_dir = f.tok_dir.empty() ? mo.model_dir : f.tok_dir;
  extras.prepare(tok_dir, !f.batch_file.empty());
  if (const k3::Vocabulary* v = extras.vocabulary()) k3::check_tokenizer_covers(config, mo.model_dir, *v, tok_dir);
  const auto batch =
      f.batch_file.empty() ? std::vector<std::vector<int32_t>>{} : k3::read_batch_file(f.batch_file, config.vocab_size);
  mo.stream.sequences = std::max<size_t>(1, batch.size());
  if (auto status = k3::answer_plan_requests(config, mo, kTool, batch.empty() ? 256 : batch.size())) return *status;
  if (!batch.empty())
    return k3::run_batch(config, mo,
                         {k3::resolve_sampling(std::nullopt, sampling_flags.given()),
                          k3::StopConditions(config.eos_token_ids, f.stop_ids, f.ignore_eos)},
                         batch, f.gen);
  if (f.ids_file.empty()) f.ids_file = "-";
  const std::string origin = f.ids_file == "-" ? "stdin" : f.ids_file;
  const std::string text = k3::read_input(f.ids_file, "ids file");
  const std::vector<int32_t> prompt = k3::parse_token_ids(text, origin, config.vocab_size);
  if (prompt.empty() && f.state_in.empty())
    throw k3::Error(k3::ExitCode::kBadInput,
                    origin + ": no token ids (the prompt is empty; pipe ids from k3-tokenize or pass --ids FILE)");

  k3::Checkpoint checkpoint = k3::Checkpoint::open(mo.model_dir);
  // A saved conversation is checked before any weight is read.
  std::optional<k3::ModelIdentity> identity;
  std::optional<k3::ConversationState> saved;
  if (!f.state_in.empty() || !f.state_out.empty()) identity = k3::state_model_identity(config, checkpoint);
  if (!f.state_in.empty()) saved = k3::load_conversation(f.state_in, *identity);
  k3::GenerationOptions go{k3::resolve_sampling(saved ? saved->sampling : std::nullopt, sampling_flags.given()),
                           k3::StopConditions(config.eos_token_ids, f.stop_ids, f.ignore_eos), f.recompute,
                           !f.logits_file.empty(), spec_flags.max_drafts()};
  const std::unique_ptr<k3::DraftSource> drafts = spec_flags.make_source(config.vocab_size);
  const size_t fed = (saved ? saved->pending.size() : 0) + prompt.size();
  if (fed == 0 && (saved->last_logits.empty() || f.teacher_forcing))
    throw k3::Error(k3::ExitCode::kBadInput, origin + ": no token ids, and " + f.state_in +
                                                 " has nothing left to evaluate; give the ids to continue with");
  const uint64_t past = saved ? static_cast<uint64_t>(saved->sequence.positions) : 0;
  const std::unique_ptr<k3::Model> model =
      k3::load_model(config, std::move(checkpoint), mo, past + fed + static_cast<uint64_t>(f.gen),
                     std::clamp<uint64_t>(std::max<uint64_t>(fed, go.max_drafts + 1), 1, 256));
  k3::Session s = model->session(go);
  s.set_drafts(drafts.get());
  if (saved) s.restore(std::move(*saved));
  k3::prepare_interrupts(s, kTool, f.state_out);
  const k3::GenerationEnd end = k3::run_prompt_and_generate(s, *model, prompt, fed, f.teacher_forcing, f.gen, extras,
                                                            &spec_flags.draft(), drafts.get());
  const k3::GenerationCounters& c = s.counters();
  k3::report_run(*model, mo, c, fed, spec_flags.draft().stats_json());

  if (!f.logits_file.empty()) s.logits_log().write(f.logits_file);
  if (!f.state_out.empty()) k3::save_state_out(s, f.state_out, *identity, kTool);
  return k3::summarize_run(*model, mo, c, fed, end == k3::GenerationEnd::kInterrupted || k3::interrupted());
}

}  // namespace

int main(int argc, char** argv) {
  return k3::run_tool(kTool, [&] { return run(argc, argv); });
}
