// k3-serve's counters, and GET /metrics in Prometheus' text format. Written
// by the HTTP threads (requests) and the engine thread (tokens, passes,
// bytes), read by /metrics: atomics and one mutex for the status table.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "serve/latency_histogram.h"

namespace k3::serve {

class ServeMetrics {
 public:
  void request_done(const std::string& endpoint, int status);
  // A request that generated: from its arrival to its first id (none when
  // it ended before one) and to its end.
  void request_timed(std::optional<double> first_token_seconds, double total_seconds);
  // Engine thread, after each pass (or run of speculative passes): the
  // weight bytes read since serving started, and the ids those passes gave
  // when they evaluated no prompt ids (0 otherwise: a prompt's bytes are not
  // a generated id's).
  void weights_read(uint64_t total_bytes, uint64_t decode_ids);

  std::atomic<uint64_t> prompt_tokens{0};  // ids of rendered prompts
  std::atomic<uint64_t> cached_tokens{0};  // of them, taken from kept states
  std::atomic<uint64_t> generated_tokens{0};
  std::atomic<uint64_t> weight_passes{0};       // weight passes (each shared by the busy slots)
  std::atomic<uint64_t> prefill_passes{0};      // of them, the ones that evaluated prompt ids
  std::atomic<uint64_t> stopped_passes{0};      // passes stopped part-way: a prompt's client went away
  std::atomic<uint64_t> decode_nanoseconds{0};  // time in passes of decode rows only
  std::atomic<uint64_t> prefill_nanoseconds{0};
  std::atomic<uint64_t> bytes_read{0};  // weight bytes read while serving (streamed trunk + experts)
  // Of them, those of passes that evaluated no prompt ids, and the ids those passes gave.
  std::atomic<uint64_t> decode_bytes_read{0}, decode_ids{0};
  std::atomic<uint64_t> experts_requested{0}, experts_resident{0};
  // The expert cache lent to prompt passes (RunRequest::lend_cache): loans, those given back, slots lent now.
  std::atomic<uint64_t> cache_lends{0}, cache_reclaims{0}, cache_lent_slots{0};
  std::atomic<uint64_t> slots_busy{0}, queue_length{0};
  std::atomic<uint64_t> kept_states_ram{0}, kept_states_disk{0}, kept_bytes_ram{0}, kept_bytes_disk{0};
  // --prompt-cache: requests continued from its files, and the prompt ids they took from them.
  std::atomic<uint64_t> prompt_cache_hits{0}, prompt_cache_ids{0};
  // Structured output: token masks computed and their time.
  std::atomic<uint64_t> constraint_masks{0}, constraint_mask_nanoseconds{0};
  // --draft: draft passes run, ids they proposed, of those verified and accepted.
  bool draft = false;
  std::atomic<uint64_t> draft_passes{0}, drafts_proposed{0}, drafts_verified{0}, drafts_accepted{0};

  // The exposition text (text/plain; version=0.0.4).
  std::string prometheus_text() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  LatencyHistogram first_token_{LatencyHistogram::request_seconds()};
  LatencyHistogram request_{LatencyHistogram::request_seconds()};
};

}  // namespace k3::serve
