#include "cli/draft_options.h"

#include <cstdio>

#include "cli/flag_checks.h"
#include "cli/path_flag.h"
#include "common/atomic_file_writer.h"
#include "common/byte_format.h"
#include "common/error.h"
#include "common/file.h"
#include "common/json_writer.h"
#include "common/progress_meter.h"
#include "draft/dspark_memory.h"

namespace k3 {

void DraftFlags::add_to(CLI::App& app) {
  app.add_option("--draft", dir_,
                 "Speculate with K3's trained draft model (a Kimi-K3-DSpark checkpoint directory: config.json + "
                 "model.safetensors): it proposes up to 7 ids per pass, the model verifies them in one weight pass; "
                 "output is bit-identical without it (docs/dspark.md) (default: none: no draft model)")
      ->check(cli::non_empty_path());
  app.add_option("--draft-log", log_path_,
                 "With --draft: write one JSON line per draft pass to FILE: {\"anchor_pos\", \"anchor_id\", \"draft\": "
                 "[ids], \"verified\", \"accepted\"} (written atomically at the end; default: none: no log)")
      ->check(cli::non_empty_path());
  app.add_option("--draft-max-context", max_context_,
                 "With --draft: no draft passes past this many positions, where its acceptance collapses "
                 "(default 65536)")
      ->check(cli::positive_integer());
}

void DraftFlags::check(const ModelConfig& config, RunRequest& stream) {
  if (dir_.empty()) {
    if (!log_path_.empty()) throw Error(ExitCode::kUsage, "--draft-log needs --draft DIR");
    return;
  }
  if (!log_path_.empty()) check_output_path(log_path_, OutputPolicy::kFileOrStream);
  config_ = load_dspark_config(dir_);
  check_draft_fits(*config_, config, dir_);
  // On presets that stream the trunk in row blocks the draft's large matrices
  // stream too (through one more block buffer, which the plan adds).
  stream.draft = dspark_memory(*config_);
}

void DraftFlags::start(Model& model, Session& session, DraftSource* fallback, const char* tool, bool teacher_forcing) {
  if (!config_) return;
  if (teacher_forcing && session.state().positions > 0)
    throw Error(ExitCode::kUsage, "--teacher-forcing with --draft drafts from position 0: drop --state-in");
  load(model);
  source_->set_keep_taps(teacher_forcing);
  const SequenceState& state = session.state();
  if (state.positions > 0) {
    std::fprintf(stderr, "%s: --draft: rebuilding the draft's context from the %lld saved positions (one prefill)\n",
                 tool, static_cast<long long>(state.positions));
    model.replay_for_tap(state.tokens, [&](const SequenceState& replay) { source_->attach(&replay); });
  }
  source_->attach(&state);
  if (fallback) {
    chain_ = std::make_unique<ChainedDrafts>(source_.get(), fallback);
    session.set_drafts(chain_.get());
  } else {
    session.set_drafts(source_.get());
  }
}

DSparkDrafts* DraftFlags::start_serving(Model& model) {
  if (!config_) return nullptr;
  load(model);
  source_->detach();  // until the server's scheduler gives it a sequence to follow
  return source_.get();
}

void DraftFlags::load(Model& model) {
  block_bytes_ = model.counters().draft_block_bytes;  // the plan's choice: resident, or streamed in these blocks
  model_ = std::make_unique<DSparkModel>(*config_, load_dspark_weights(*config_, dir_, block_bytes_));
  source_ = std::make_unique<DSparkDrafts>(*model_, model.weights(), &model.pool(),
                                           VerifyPolicy(static_cast<size_t>(config_->block_size), {}, max_context_));
  source_->set_log([this](const DraftLogEntry& e) {
    JsonWriter w;  // one line per pass
    w.begin_object();
    w.key("anchor_pos").value(static_cast<long long>(e.anchor_pos));
    w.key("anchor_id").value(e.anchor_id);
    w.key("draft").begin_array();
    for (int32_t id : e.draft) w.value(id);
    w.end_array();
    w.key("verified").value(static_cast<unsigned long long>(e.verified));
    w.key("accepted").value(static_cast<unsigned long long>(e.accepted));
    w.end_object();
    log_ += w.take() + "\n";
  });
  model.set_layer_tap(source_.get());
}

void DraftFlags::teacher_force(const std::vector<int32_t>& ids) {
  if (!source_) return;
  for (size_t pos = 1; pos < ids.size(); ++pos) source_->draft_at(static_cast<int64_t>(pos), ids[pos]);
}

void DraftFlags::finish(const char* tool) {
  if (!source_) return;
  source_->flush();
  const DSparkStats& s = source_->stats();
  std::fprintf(stderr,
               "%s: draft: %lld passes, %lld ids drafted, %lld verified, %lld accepted; %lld passes skipped past "
               "--draft-max-context %lld%s\n",
               tool, static_cast<long long>(s.passes), static_cast<long long>(s.proposed),
               static_cast<long long>(s.verified), static_cast<long long>(s.accepted),
               static_cast<long long>(s.skipped_long_context), static_cast<long long>(max_context_),
               block_bytes_ ? ("; weights streamed: " + format_bytes(model_->weights().stream->bytes_read()) +
                               " read in " + format_bytes(block_bytes_) + " row blocks")
                                  .c_str()
                            : "");
  if (!log_path_.empty()) write_file_atomic(log_path_, log_.data(), log_.size(), OutputPolicy::kFileOrStream);
}

std::string DraftFlags::stats_json() const {
  if (!source_) return {};
  const DSparkWeights& w = model_->weights();
  return draft_stats_member(source_->stats(), max_context_, source_->policy().accepted(), source_->policy().offered(),
                            {block_bytes_, w.stream ? w.stream->bytes_read() : 0});
}

std::string draft_stats_member(const DSparkStats& s, int64_t max_context, const std::vector<int64_t>& accepted,
                               const std::vector<int64_t>& offered, DraftStreamFigures streamed) {
  // Built by the writer rather than into a fixed buffer: the per-position
  // array grows with the draft's block size and its counts' digits.
  JsonWriter w;
  w.begin_object();
  w.key("passes").value(static_cast<long long>(s.passes));
  w.key("drafts_proposed").value(static_cast<long long>(s.proposed));
  w.key("drafts_verified").value(static_cast<long long>(s.verified));
  w.key("drafts_accepted").value(static_cast<long long>(s.accepted));
  w.key("positions_fused").value(static_cast<long long>(s.positions_fused));
  w.key("max_context").value(static_cast<long long>(max_context));
  w.key("skipped_long_context").value(static_cast<long long>(s.skipped_long_context));
  w.key("skipped_no_taps").value(static_cast<long long>(s.skipped_no_taps));
  w.key("streamed_block_bytes").value(static_cast<unsigned long long>(streamed.block_bytes));
  w.key("bytes_read").value(static_cast<unsigned long long>(streamed.bytes_read));
  w.key("accepted_of_offered_by_position").begin_array();
  for (size_t i = 0; i < offered.size(); ++i) {
    w.begin_array();
    w.value(static_cast<long long>(i < accepted.size() ? accepted[i] : 0));
    w.value(static_cast<long long>(offered[i]));
    w.end_array();
  }
  w.end_array();
  w.end_object();
  return json_member_text("draft", w.take(), 2);
}

}  // namespace k3
