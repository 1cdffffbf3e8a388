#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "common/error.h"
#include "sampling/portable_exp.h"
#include "sampling/sampling_settings.h"

namespace k3 {

void check_sampling_params(const SamplingParams& p, SettingNames names) {
  check_setting(SamplingSetting::kTemperature, p.temperature, names);
  check_setting(SamplingSetting::kTopK, p.top_k, names);
  check_setting(SamplingSetting::kTopP, p.top_p, names);
  check_setting(SamplingSetting::kMinP, p.min_p, names);
  check_penalty_params(p.penalties, names);
}

void validate_sampling_params(const SamplingParams& p) { check_sampling_params(p, SettingNames::kFlag); }

namespace {
void check_finite(const float* logits, int64_t vocab) {
  for (int64_t i = 0; i < vocab; ++i)
    if (!std::isfinite(logits[i]))
      throw Error(ExitCode::kInternal, "sampler: logit of id " + std::to_string(i) + " is not finite (" +
                                           std::to_string(logits[i]) + "); this is a bug in k3");
}
}  // namespace

int32_t greedy_token(const float* logits, int64_t vocab, const TokenMask* mask) {
  if (vocab <= 0) throw Error(ExitCode::kInternal, "sampler: empty logits row");
  check_finite(logits, vocab);
  if (mask) {
    int64_t best = -1;
    for (int64_t i = 0; i < vocab; ++i)
      if (mask->allowed(i) && (best < 0 || logits[i] > logits[best])) best = i;  // strict: ties keep the lower id
    if (best < 0) throw Error(ExitCode::kInternal, "sampler: the output constraint allows no id");
    return static_cast<int32_t>(best);
  }
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best]) best = i;  // strict: an equal logit keeps the lower id
  return static_cast<int32_t>(best);
}

std::vector<Candidate> sampling_candidates(const float* logits, int64_t vocab, const SamplingParams& params,
                                           const TokenMask* mask) {
  validate_sampling_params(params);
  if (params.greedy()) throw Error(ExitCode::kInternal, "sampler: sampling_candidates called with temperature 0");
  if (vocab <= 0) throw Error(ExitCode::kInternal, "sampler: empty logits row");
  check_finite(logits, vocab);

  // 1. Order. With top-k only the first k need ordering; the kept set and its
  // order are the same as after a full sort because the order is total.
  std::vector<int32_t> ids;
  ids.reserve(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i)
    if (!mask || mask->allowed(i)) ids.push_back(static_cast<int32_t>(i));
  if (ids.empty()) throw Error(ExitCode::kInternal, "sampler: the output constraint allows no id");
  auto before = [logits](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  size_t n = ids.size();
  if (params.top_k > 0 && static_cast<size_t>(params.top_k) < n) {
    n = static_cast<size_t>(params.top_k);  // 3. top-k
    std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), before);
  } else {
    std::sort(ids.begin(), ids.end(), before);
  }

  // 2 + 4. Temperature and softmax in double, left to right.
  std::vector<Candidate> c(n);
  const double z0 = static_cast<double>(logits[ids[0]]) / params.temperature;
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double z = static_cast<double>(logits[ids[i]]) / params.temperature;
    c[i].id = ids[i];
    c[i].weight = portable_exp(z - z0);
    total += c[i].weight;
  }
  for (size_t i = 0; i < n; ++i) c[i].probability = c[i].weight / total;

  // 5. top-p.
  if (params.top_p < 1.0) {
    double cum = 0.0;
    size_t keep = n;
    for (size_t i = 0; i < n; ++i) {
      cum += c[i].probability;
      if (cum >= params.top_p) {
        keep = i + 1;
        break;
      }
    }
    n = keep;
  }
  // 6. min-p, relative to the most likely candidate.
  if (params.min_p > 0.0) {
    const double floor_p = params.min_p * c[0].probability;
    size_t keep = 1;
    while (keep < n && c[keep].probability >= floor_p) ++keep;
    n = keep;
  }
  c.resize(n);
  double kept_total = 0.0;
  for (const Candidate& x : c) kept_total += x.weight;
  for (Candidate& x : c) x.probability = x.weight / kept_total;
  return c;
}

int32_t pick_candidate(const std::vector<Candidate>& kept, double u) {
  if (kept.empty()) throw Error(ExitCode::kInternal, "sampler: no candidate to pick from");
  double total = 0.0;
  for (const Candidate& x : kept) total += x.weight;
  const double target = u * total;
  double cum = 0.0;
  for (const Candidate& x : kept) {
    cum += x.weight;
    if (target < cum) return x.id;
  }
  return kept.back().id;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
  validate_sampling_params(params_);
}

int32_t Sampler::next(const float* logits, int64_t vocab, int64_t position, std::span<const int32_t> sequence,
                      const TokenMask* mask) {
  const bool penalise = params_.penalties.active();
  if ((penalise || !params_.logit_bias.empty()) && vocab > 0) {
    penalised_.assign(logits, logits + vocab);
    if (penalise) apply_penalties(penalised_.data(), vocab, sequence, params_.penalties);
    apply_logit_bias(penalised_.data(), vocab, params_.logit_bias);
    logits = penalised_.data();
  }
  if (params_.greedy()) return greedy_token(logits, vocab, mask);
  std::vector<Candidate> kept = sampling_candidates(logits, vocab, params_, mask);
  return pick_candidate(kept, rng_.uniform_at(position));
}

}  // namespace k3
