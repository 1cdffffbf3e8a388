#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/json_writer.h"
#include "sampling/portable_exp.h"

namespace k3 {

PositionLogprobs logprobs_at(const float* logits, int64_t vocab, int32_t chosen, int top_n, int64_t position) {
  if (vocab <= 0 || chosen < 0 || chosen >= vocab || top_n < 0)
    throw Error(ExitCode::kInternal, "logprobs: chosen id or count out of range");
  double m = logits[0];
  for (int64_t i = 1; i < vocab; ++i) m = std::max(m, static_cast<double>(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += portable_exp(static_cast<double>(logits[i]) - m);
  const double log_sum = std::log(sum);
  auto lp = [&](int32_t id) { return (static_cast<double>(logits[id]) - m) - log_sum; };
  PositionLogprobs r;
  r.position = position;
  r.chosen = {chosen, lp(chosen)};
  const size_t n = std::min<size_t>(static_cast<size_t>(top_n), static_cast<size_t>(vocab));
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) ids[i] = static_cast<int32_t>(i);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n), ids.end(), [logits](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  for (size_t i = 0; i < n; ++i) r.top.push_back({ids[i], lp(ids[i])});
  return r;
}

std::string logprobs_json_line(const PositionLogprobs& p) {
  JsonWriter w = JsonWriter::compact();  // one short line per generated id
  w.begin_object();
  w.key("position").value(static_cast<long long>(p.position));
  w.key("id").value(p.chosen.id).key("logprob").value(p.chosen.logprob);
  w.key("top").begin_array();
  for (const TokenLogprob& t : p.top)
    w.begin_object().key("id").value(t.id).key("logprob").value(t.logprob).end_object();
  w.end_array();
  w.end_object();
  return w.take() + "\n";
}

}  // namespace k3
