#include "cli/draft_options.h"

#include <cstdio>

#include "cli/flag_checks.h"
#include "common/atomic_file_writer.h"
#include "common/error.h"
#include "common/file.h"

namespace k3 {

void DraftFlags::add_to(CLI::App& app) {
  app.add_option("--draft", dir_,
                 "Speculate with K3's trained draft model (a Kimi-K3-DSpark checkpoint directory: config.json + "
                 "model.safetensors): it proposes up to 7 ids per pass, the model verifies them in one weight pass; "
                 "output is bit-identical without it (docs/dspark.md)");
  app.add_option("--draft-log", log_path_,
                 "With --draft: write one JSON line per draft pass to FILE: {\"anchor_pos\", \"anchor_id\", \"draft\": "
                 "[ids], \"verified\", \"accepted\"} (written atomically at the end)");
  app.add_option("--draft-max-context", max_context_,
                 "With --draft: no draft passes past this many positions, where its acceptance collapses "
                 "(default 65536)")
      ->check(cli::positive_integer());
}

void DraftFlags::check(const ModelConfig& config, StreamingRequest& stream) {
  if (dir_.empty()) {
    if (!log_path_.empty()) throw Error(ExitCode::kUsage, "--draft-log needs --draft DIR");
    return;
  }
  if (!log_path_.empty()) check_output_path(log_path_, OutputPolicy::kFileOrStream);
  config_ = load_dspark_config(dir_);
  check_draft_fits(*config_, config, dir_);
  // Weights, a prefill batch of taps and a draft pass's activations; the
  // context grows by DraftContext::bytes_per_position.
  const uint64_t taps = 256ull * static_cast<uint64_t>(config_->num_taps()) * config_->hidden_size * 4;
  const uint64_t pass = static_cast<uint64_t>(config_->block_size) * 4 *
                        (static_cast<uint64_t>(config_->vocab_size) + 4ull * config_->intermediate_size);
  stream.draft_fixed_bytes = dspark_weight_bytes(*config_) + taps + pass;
  stream.draft_bytes_per_position = DraftContext::bytes_per_position(*config_);
}

void DraftFlags::start(Engine& engine, ThreadPool& pool, GenerationSession& session, DraftSource* fallback,
                       const char* tool, bool teacher_forcing) {
  if (!config_) return;
  if (teacher_forcing && session.state().positions > 0)
    throw Error(ExitCode::kUsage, "--teacher-forcing with --draft drafts from position 0: drop --state-in");
  model_ = std::make_unique<DSparkModel>(*config_, load_dspark_weights(*config_, dir_));
  source_ = std::make_unique<DSparkDrafts>(*model_, engine.source(), &pool,
                                           VerifyPolicy(static_cast<size_t>(config_->block_size), {}, max_context_));
  source_->set_log([this](const DraftLogEntry& e) {
    std::string ids;
    for (int32_t id : e.draft) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
    log_ += "{\"anchor_pos\": " + std::to_string(e.anchor_pos) + ", \"anchor_id\": " + std::to_string(e.anchor_id) +
            ", \"draft\": [" + ids + "], \"verified\": " + std::to_string(e.verified) +
            ", \"accepted\": " + std::to_string(e.accepted) + "}\n";
  });
  source_->set_keep_taps(teacher_forcing);
  engine.set_layer_tap(source_.get());
  const SequenceState& state = session.state();
  if (state.positions > 0) {
    std::fprintf(stderr, "%s: --draft: rebuilding the draft's context from the %lld saved positions (one prefill)\n",
                 tool, static_cast<long long>(state.positions));
    SequenceState replay;
    engine.reset(replay);
    source_->attach(&replay);
    engine.forward(replay, state.tokens, LogitRows::kNone, nullptr);
  }
  source_->attach(&state);
  if (fallback) {
    chain_ = std::make_unique<ChainedDrafts>(source_.get(), fallback);
    session.set_draft_source(chain_.get());
  } else {
    session.set_draft_source(source_.get());
  }
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
               "--draft-max-context %lld\n",
               tool, static_cast<long long>(s.passes), static_cast<long long>(s.proposed),
               static_cast<long long>(s.verified), static_cast<long long>(s.accepted),
               static_cast<long long>(s.skipped_long_context), static_cast<long long>(max_context_));
  if (!log_path_.empty()) write_file_atomic(log_path_, log_.data(), log_.size(), OutputPolicy::kFileOrStream);
}

std::string DraftFlags::stats_json() const {
  if (!source_) return {};
  const DSparkStats& s = source_->stats();
  std::string per;
  const auto& off = source_->policy().offered();
  const auto& acc = source_->policy().accepted();
  for (size_t i = 0; i < off.size(); ++i)
    per += (i ? ", " : "") + std::string("[") + std::to_string(acc[i]) + ", " + std::to_string(off[i]) + "]";
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "  \"draft\": {\"passes\": %lld, \"drafts_proposed\": %lld, \"drafts_verified\": %lld, "
                "\"drafts_accepted\": %lld, \"positions_fused\": %lld, \"max_context\": %lld, "
                "\"skipped_long_context\": %lld, \"skipped_no_taps\": %lld, \"accepted_of_offered_by_position\": [%s]}",
                static_cast<long long>(s.passes), static_cast<long long>(s.proposed),
                static_cast<long long>(s.verified), static_cast<long long>(s.accepted),
                static_cast<long long>(s.positions_fused), static_cast<long long>(max_context_),
                static_cast<long long>(s.skipped_long_context), static_cast<long long>(s.skipped_no_taps),
                per.c_str());
  return buf;
}

}  // namespace k3
