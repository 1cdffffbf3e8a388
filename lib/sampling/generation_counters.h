// A generation's counters as plain data (k3::Session::counters(), the
// figures --stats-json prints), kept by lib/generate's generation session.
#pragma once

#include <cstdint>

namespace k3 {

struct GenerationCounters {
  int64_t prompt_ids = 0;       // ids evaluated by feed() (pending ones included)
  int64_t generated = 0;        // ids sampled by generate()
  int64_t decode_steps = 0;     // incremental evaluations of generated ids
  int64_t weight_passes = 0;    // engine batches run (each reads the weights once)
  int64_t generate_passes = 0;  // of those, the ones run by generate() (decode and verification)
  int64_t drafts_proposed = 0;  // draft ids verified
  int64_t drafts_accepted = 0;  // of those, the ones the model chose too
  double prefill_seconds = 0;
  double decode_seconds = 0;
  // Structured output (set_constraint): masks computed and their time.
  int64_t constraint_masks = 0;
  double constraint_seconds = 0;
  double constraint_max_seconds = 0;
};

}  // namespace k3
