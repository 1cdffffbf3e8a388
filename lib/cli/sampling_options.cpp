#include "cli/sampling_options.h"

namespace k3 {

void SamplingFlags::add_to(CLI::App& app) {
  temp_ = app.add_option("--temp", values_.temperature, "Sampling temperature (default 0: greedy, ties to the lower id)");
  top_k_ = app.add_option("--top-k", values_.top_k, "Sample among the K most likely ids (default 0: off)");
  top_p_ = app.add_option("--top-p", values_.top_p,
                          "Sample among the most likely ids whose probabilities sum to P (default 1: off)");
  min_p_ = app.add_option("--min-p", values_.min_p,
                          "Drop ids less likely than M times the most likely one (default 0: off)");
  seed_ = app.add_option("--seed", values_.seed,
                         "Random seed for sampling (default 0); a seed gives the same ids on every machine");
}

SamplingOverrides SamplingFlags::given() const {
  SamplingOverrides o;
  if (temp_->count()) o.temperature = values_.temperature;
  if (top_k_->count()) o.top_k = values_.top_k;
  if (top_p_->count()) o.top_p = values_.top_p;
  if (min_p_->count()) o.min_p = values_.min_p;
  if (seed_->count()) o.seed = values_.seed;
  return o;
}

}  // namespace k3
