// --draft DIR (K3's trained draft model, DSpark; docs/dspark.md),
// --draft-log FILE and --draft-max-context N, declared once for the tools
// that generate, and what they do around a generation session.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "draft/dspark_config.h"
#include "draft/dspark_drafts.h"
#include "engine/model.h"
#include "engine/session.h"
#include "runtime/streaming_setup.h"

namespace k3 {

class DraftFlags {
 public:
  void add_to(CLI::App& app);
  bool given() const { return !dir_.empty(); }
  // Reads DIR/config.json and refuses a draft that does not fit the model
  // (Error kBadModel, exit 3), before any weight is read.
  // Sets the draft's memory in `stream` for the plan.
  void check(const ModelConfig& config, RunRequest& stream);
  // Drafts per pass the draft can propose (its block size; 0 when off).
  size_t max_drafts() const { return config_ ? static_cast<size_t>(config_->block_size) : 0; }
  const DSparkConfig* config() const { return config_ ? &*config_ : nullptr; }

  // Loads the draft's weights and makes it the session's draft source, with
  // `fallback` (may be null) asked when the draft proposes nothing. A
  // session that continues a saved state has no taps for its saved
  // positions: they are rebuilt by running the target over the saved ids
  // once (one prefill), so drafts continue exactly as in one run.
  // Under `teacher_forcing` every tap is kept for teacher_force() (the
  // session must start from position 0).
  // The draft's matrices stream through a bounded buffer when the model's
  // plan says so (ModelCounters::draft_block_bytes), else they are resident.
  void start(Model& model, Session& session, DraftSource* fallback, const char* tool, bool teacher_forcing = false);
  // k3-serve: loads the draft and sets its tap on `engine`, following no
  // sequence yet (the server's scheduler attaches it to one). nullptr when off.
  DSparkDrafts* start_serving(Model& model);
  // --teacher-forcing: the session has evaluated `ids` from position 0; one
  // unverified draft pass for every anchor position 1 .. ids.size()-1.
  void teacher_force(const std::vector<int32_t>& ids);
  // After the run: writes --draft-log and a summary line on stderr.
  void finish(const char* tool);
  // "draft": {...} for --stats-json (empty when off).
  std::string stats_json() const;

 private:
  void load(Model& model);  // the weights, the source, its log and the engine's tap

  std::string dir_, log_path_;
  int64_t max_context_ = VerifyPolicy::kDefaultMaxContext;
  uint64_t block_bytes_ = 0;  // the draft streams in row blocks of this size (0: resident)
  std::optional<DSparkConfig> config_;
  std::unique_ptr<DSparkModel> model_;
  std::unique_ptr<DSparkDrafts> source_;
  std::unique_ptr<ChainedDrafts> chain_;
  std::string log_;
};

// The `"draft": {...}` member --stats-json gets (indented as one member of
// the stats object): the counters, the streamed figures and, per draft
// position, [accepted, offered] (`accepted` may be shorter than `offered`:
// missing counts are 0).
// `streamed`: the row blocks the draft's matrices streamed in (0: resident)
// and the bytes read through them.
struct DraftStreamFigures {
  uint64_t block_bytes = 0, bytes_read = 0;
};
std::string draft_stats_member(const DSparkStats& stats, int64_t max_context, const std::vector<int64_t>& accepted,
                               const std::vector<int64_t>& offered, DraftStreamFigures streamed = {});

}  // namespace k3
