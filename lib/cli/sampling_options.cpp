#include "cli/sampling_options.h"

#include "cli/seed_flag.h"

namespace k3 {

void SamplingFlags::add_to(CLI::App& app) {
  temp_ =
      app.add_option("--temp", values_.temperature, "Sampling temperature (default 0: greedy, ties to the lower id)");
  top_k_ = app.add_option("--top-k", values_.top_k, "Sample among the K most likely ids (default 0: off)");
  top_p_ = app.add_option("--top-p", values_.top_p,
                          "Sample among the most likely ids whose probabilities sum to P (default 1: off)");
  min_p_ = app.add_option("--min-p", values_.min_p,
                          "Drop ids less likely than M times the most likely one (default 0: off)");
  seed_ = app.add_option("--seed", values_.seed,
                         "Random seed for sampling (default 0; 0 to 2^63-1, as k3-serve's \"seed\"); a seed gives "
                         "the same ids on every machine")
              ->check(cli::seed_range());
  repetition_ =
      app.add_option("--repeat-penalty", penalties_.repetition,
                     "Divide positive logits (multiply negative ones) of ids among the last --repeat-last-n by R "
                     "(default 1: off; llama.cpp's repeat_penalty)");
  frequency_ = app.add_option(
      "--frequency-penalty", penalties_.frequency,
      "Subtract F times each id's count among the last --repeat-last-n from its logit (default 0; [-2, 2])");
  presence_ =
      app.add_option("--presence-penalty", penalties_.presence,
                     "Subtract P from the logit of each id among the last --repeat-last-n (default 0; [-2, 2])");
  last_n_ = app.add_option("--repeat-last-n", penalties_.last_n,
                           "How many of the latest ids (prompt included) the penalties look at (default 64; -1: all)");
  // Checked as soon as the flags are parsed: a bad value is reported before
  // stdin is read (not as "no token ids" once it is empty).
  app.parse_complete_callback([this] {
    SamplingParams all = values_;
    all.penalties = penalties_;
    validate_sampling_params(all);
  });
}

SamplingOverrides SamplingFlags::given() const {
  SamplingOverrides o;
  if (temp_->count()) o.temperature = values_.temperature;
  if (top_k_->count()) o.top_k = values_.top_k;
  if (top_p_->count()) o.top_p = values_.top_p;
  if (min_p_->count()) o.min_p = values_.min_p;
  if (seed_->count()) o.seed = values_.seed;
  if (repetition_->count()) o.repetition = penalties_.repetition;
  if (frequency_->count()) o.frequency = penalties_.frequency;
  if (presence_->count()) o.presence = penalties_.presence;
  if (last_n_->count()) o.last_n = penalties_.last_n;
  return o;
}

}  // namespace k3
