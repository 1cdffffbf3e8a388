// What a generation is asked to do and why it ended: plain data that front
// ends set and read through k3::Session (engine/session.h) and that
// lib/generate's generation session carries out.
#pragma once

#include <cstddef>

#include "sampling/sampler.h"
#include "sampling/stop_conditions.h"

namespace k3 {

struct GenerationOptions {
  SamplingParams sampling;  // greedy by default
  StopConditions stop;      // EOS ids and --stop-id
  bool recompute = false;   // re-run the whole prefix for every new token (slow reference path)
  bool log_logits = false;  // keep every evaluated row (k3-forward --logits)
  // Speculative decoding: up to this many drafts per weight pass from the
  // draft source (set_draft_source); 0: one id per pass.
  size_t max_drafts = 0;
};

// Why generate() returned.
enum class GenerationEnd {
  kLength,       // max_new ids were generated (or max_new was 0)
  kStop,         // a stop id was generated (it was emitted and is pending)
  kInterrupted,  // interrupted() said so between two tokens
};

}  // namespace k3
