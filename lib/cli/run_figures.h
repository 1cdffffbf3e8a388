// What a run that loaded a model reports about it at the end: the streaming
// counters as text on stderr, and --stats-json (written with
// common/json_writer.h, so it is valid JSON whatever its size).
#pragma once

#include <cstdint>
#include <string>

#include "engine/model.h"
#include "engine/session.h"
#include "runtime/streaming_weights.h"

namespace k3 {

// The counters of a run.
struct RunFigures {
  bool streaming = true;  // false: every weight resident (the streaming counters are not measured)
  uint64_t prompt_tokens = 0;
  uint64_t decode_steps = 0;
  uint64_t generated = 0;  // ids generated: the denominator of s/token (common/rate_format.h)
  double prefill_seconds = 0, decode_seconds = 0;
  StreamStats at_start, after_prefill, at_end;
  uint64_t load_bytes = 0;  // read at start: the pinned trunk, or every weight when resident
  double load_seconds = 0;
  uint64_t peak_rss_bytes = 0;
  uint64_t forecast_peak_rss = 0;
  bool direct_io = true;
};

// The streaming counters, a few lines for stderr (each "TOOL: ...").
std::string figures_text(const RunFigures& f);

// What --stats-json adds to the figures.
struct RunInfo {
  std::string version, preset;
  int threads = 0, io_threads = 0;
  uint64_t trunk_budget = 0, cache_budget = 0;
  double load_seconds = 0, total_seconds = 0;
  // A streaming run's expert cache: the eviction policy that ran, and
  // whether --expert-lookahead guessed experts ahead.
  std::string expert_cache_policy;
  bool expert_lookahead = false;
};

// The --stats-json document: the figures, "generation" (weight passes,
// tokens per pass, drafts, bytes per generated token and, per pass size,
// what a pass read) and "run" (version, threads, budgets, wall times).
std::string stats_json(const RunFigures& f, const GenerationCounters& c, const ModelCounters& m, const RunInfo& run);

// --stats-json's "gpu" member (--gpu; empty without a device): the plan's
// device bytes, and the products run there, the bytes uploaded and the
// device memory peak, exact.
std::string device_stats_member(const ModelCounters& m);
// The "expert_cache_loan" member (empty when the plan lends nothing): the
// bytes the plan lends each prefill chunk (MemoryPlan::cache_lent_bytes),
// how often the cache was lent and given back, and the slots still lent
// at the end (0: decode got them back).
std::string expert_cache_loan_member(const ModelCounters& m);
// The "layer_hold" member (empty when no chunk holds its layers,
// MemoryPlan::layer_held): the plan's hold buffer and lent pinned layers,
// and what the run read: layer sections read whole into the buffer, their
// bytes (in prefill.trunk_bytes too), the lent sections read again, and the
// units read ahead into the stream buffers lent to the hold, dropped unused,
// and the layers over the hold limit, streamed in row blocks inside a chunk.
std::string layer_hold_member(const ModelCounters& m);

}  // namespace k3
