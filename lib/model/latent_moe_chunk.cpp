#include "model/latent_moe_chunk.h"

#include <algorithm>

#include "common/error.h"
#include "io/spill_file.h"
#include "kernels/rms_norm.h"
#include "model/expert_sum.h"
#include "model/forward_scratch.h"
#include "model/latent_moe.h"
#include "model/linear.h"
#include "model/router.h"
#include "model/situ_mlp.h"

namespace k3 {

namespace {

// The widest SiTU MLP of a MoE layer: the shared experts or one routed expert.
size_t widest_situ(const ModelConfig& c) {
  return static_cast<size_t>(c.moe_intermediate_size) * static_cast<size_t>(std::max(1, c.num_shared_experts));
}

void check_width(const ModelConfig& c, size_t inter, const char* what) {
  if (inter > widest_situ(c))
    throw Error(ExitCode::kInternal, std::string(what) + " is wider than the config's MoE intermediate size");
}

// Rows of the op area's third part: a group's expert outputs [n, latent]
// (experts step) or the shared experts' output [n, hidden] on its way to or
// from the spill file (prepare, combine).
size_t staged_rows_floats(const ModelConfig& c, size_t n) {
  return n * std::max(static_cast<size_t>(c.routed_expert_hidden_size), static_cast<size_t>(c.hidden_size));
}

template <typename T>
void grow(std::vector<T>& v, size_t count) {
  if (v.size() < count) v.resize(count);
}

}  // namespace

void MoeChunkRows::reserve(const ModelConfig& c, size_t rows, SpillFile* spill_file, uint64_t offset) {
  const size_t k = c.num_experts_per_token, latent = c.routed_expert_hidden_size;
  grow(chosen, rows * k);
  grow(weights, rows * k);
  grow(z, rows * latent);
  spill = spill_file;
  spill_offset = offset;
  if (!spill) grow(shared, rows * static_cast<size_t>(c.hidden_size));
  grow(y, rows * latent);
  grow(start, static_cast<size_t>(c.num_experts) + 1);
  grow(expert_rows, rows * k);
  if (experts.capacity() < static_cast<size_t>(c.num_experts)) experts.reserve(c.num_experts);
  if (group.capacity() < static_cast<size_t>(c.num_experts)) group.reserve(c.num_experts);
}

uint64_t MoeChunkRows::bytes_per_row(const ModelConfig& c, bool spilled) {
  const uint64_t k = c.num_experts_per_token, latent = c.routed_expert_hidden_size;
  // Routing (id, weight, entry index), z and y; the shared output unless spilled.
  return k * (sizeof(int32_t) + sizeof(float) + sizeof(size_t)) + sizeof(float) * 2 * latent +
         (spilled ? 0 : spilled_bytes_per_row(c));
}

uint64_t MoeChunkRows::spilled_bytes_per_row(const ModelConfig& c) {
  return static_cast<uint64_t>(c.hidden_size) * sizeof(float);
}

size_t moe_chunk_scratch_floats(const ModelConfig& c, size_t n) {
  using C = ScratchCarver<float>;
  const size_t E = c.num_experts, latent = c.routed_expert_hidden_size;
  // Router logits and routing scratch (prepare), or an expert's input rows
  // (experts), or y's norm (combine); the widest SiTU MLP's g and u; and a
  // group's outputs (experts) or the shared rows to or from the spill file.
  return C::padded(std::max(n * E + 2 * E, n * latent)) + C::padded(situ_scratch_floats(n, widest_situ(c))) +
         C::padded(staged_rows_floats(c, n));
}

void moe_chunk_prepare(const ModelConfig& c, const MoeTrunkWeights& w, const float* x, size_t n, size_t r0,
                       MoeChunkRows& m, ThreadPool* pool, ForwardScratch& scratch) {
  const size_t E = c.num_experts, k = c.num_experts_per_token, latent = c.routed_expert_hidden_size;
  ScratchCarver<float> carve(scratch.op_floats(moe_chunk_scratch_floats(c, n)));
  float* logits = carve.take(std::max(n * E + 2 * E, n * latent));
  float* route = logits + n * E;
  float* situ = carve.take(situ_scratch_floats(n, widest_situ(c)));
  float* staged = carve.take(staged_rows_floats(c, n));
  int32_t* order = scratch.op_ints(E);
  lin(w.router, x, n, logits, pool);
  route_tokens(c, logits, w.router_bias.data, n, m.chosen.data() + r0 * k, m.weights.data() + r0 * k, route, order);
  lin(w.latent_down, x, n, m.z.data() + r0 * latent, pool);
  check_width(c, out_dim(w.shared.gate_proj), "the shared experts' MLP");
  const size_t hidden = c.hidden_size;
  float* shared = m.spill ? staged : m.shared.data() + r0 * hidden;
  situ_mlp(w.shared, SituParams::from(c), x, n, shared, pool, situ);
  if (m.spill) m.spill->write(m.spill_offset + r0 * hidden * sizeof(float), shared, n * hidden * sizeof(float));
}

namespace {

// The distinct experts of the chunk (ascending id) and, per expert, the
// routing entries that chose it (ascending row), as consecutive runs of
// expert_rows.
void sort_entries(const ModelConfig& c, size_t rows, MoeChunkRows& m, ForwardScratch& scratch) {
  const size_t E = c.num_experts, k = c.num_experts_per_token;
  size_t* start = m.start.data();
  std::fill(start, start + E + 1, size_t{0});
  for (size_t i = 0; i < rows * k; ++i) ++start[m.chosen[i] + 1];
  for (size_t e = 0; e < E; ++e) start[e + 1] += start[e];
  size_t* fill = scratch.op_indices(E);
  std::copy(start, start + E, fill);
  for (size_t i = 0; i < rows * k; ++i) m.expert_rows[fill[m.chosen[i]]++] = i;
  m.experts.clear();
  for (size_t e = 0; e < E; ++e)
    if (start[e + 1] > start[e]) m.experts.push_back(static_cast<int>(e));
}

// The next group from m.experts[next]: consecutive experts while their
// entries fit in `rows` rows of outputs (one expert alone always makes a
// group). Returns the index after the group.
size_t next_group(size_t next, size_t rows, MoeChunkRows& m) {
  m.group.clear();
  const size_t first = m.start[m.experts[next]];
  while (next < m.experts.size() && (m.group.empty() || m.start[m.experts[next] + 1] - first <= rows))
    m.group.push_back(m.experts[next++]);
  return next;
}

// Adds the outputs `out` [to - from, latent] of the sorted entries [from, to)
// into their rows' sums.
void add_outputs(const ModelConfig& c, size_t from, size_t to, const float* out, MoeChunkRows& m) {
  const size_t k = c.num_experts_per_token, latent = c.routed_expert_hidden_size;
  for (size_t r = from; r < to; ++r) {
    const size_t entry = m.expert_rows[r];
    add_expert_output(m.y.data() + entry / k * latent, m.weights[entry], out + (r - from) * latent, latent);
  }
}

}  // namespace

void moe_chunk_experts(const ModelConfig& c, int layer, WeightSource& source, size_t rows, size_t sub_batch,
                       MoeChunkRows& m, ThreadPool* pool, ForwardScratch& scratch) {
  const size_t E = c.num_experts, k = c.num_experts_per_token, latent = c.routed_expert_hidden_size;
  sub_batch = std::max<size_t>(1, std::min(sub_batch, rows));  // an expert has at most `rows` entries
  sort_entries(c, rows, m, scratch);
  std::fill(m.y.begin(), m.y.begin() + rows * latent, 0.0f);

  ScratchCarver<float> carve(scratch.op_floats(moe_chunk_scratch_floats(c, sub_batch)));
  float* in = carve.take(std::max(sub_batch * E + 2 * E, sub_batch * latent));
  float* situ = carve.take(situ_scratch_floats(sub_batch, widest_situ(c)));
  float* out = carve.take(staged_rows_floats(c, sub_batch));  // [sub_batch, latent]: a group's outputs
  const SituParams params = SituParams::from(c);
  source.prefetch_experts(layer, m.experts);
  for (size_t next = 0; next < m.experts.size();) {
    next = next_group(next, sub_batch, m);
    const size_t first = m.start[m.group.front()], end = m.start[m.group.back() + 1];
    // An expert whose rows outnumber a sub-batch is a group alone: each
    // piece is added into its rows' sums as it is computed (one entry per
    // row, so no row sees another order).
    const bool alone = end - first > sub_batch;
    // Each expert is delivered once and runs on all its rows, a sub-batch
    // at a time, into its own part of the outputs (in any delivery order).
    source.for_each_expert(layer, m.group, [&](size_t s, const ExpertWeights& ew) {
      const size_t e = static_cast<size_t>(m.group[s]), from = m.start[e], count = m.start[e + 1] - from;
      check_width(c, out_dim(ew.w1), "a routed expert's MLP");
      for (size_t b = 0; b < count; b += sub_batch) {
        const size_t piece = std::min(sub_batch, count - b);
        for (size_t r = 0; r < piece; ++r) {
          const float* zr = m.z.data() + m.expert_rows[from + b + r] / k * latent;
          std::copy(zr, zr + latent, in + r * latent);
        }
        situ_mlp(ew, params, in, piece, alone ? out : out + (from - first + b) * latent, pool, situ);
        if (alone) add_outputs(c, from + b, from + b + piece, out, m);
      }
    });
    // Entries run by ascending expert id: each row's experts are added in
    // the one order of every path (model/expert_sum.h).
    if (!alone) add_outputs(c, first, end, out, m);
  }
}

void moe_chunk_combine(const ModelConfig& c, const MoeTrunkWeights& w, size_t n, size_t r0, const MoeChunkRows& m,
                       float* out, ThreadPool* pool, ForwardScratch& scratch) {
  const size_t hidden = c.hidden_size, latent = c.routed_expert_hidden_size;
  ScratchCarver<float> carve(scratch.op_floats(moe_chunk_scratch_floats(c, n)));
  float* normed = carve.take(std::max(n * c.num_experts + 2 * c.num_experts, n * latent));  // [n, latent]
  carve.take(situ_scratch_floats(n, widest_situ(c)));
  float* staged = carve.take(staged_rows_floats(c, n));
  const float* y = m.y.data() + r0 * latent;  // [n, latent], summed by moe_chunk_experts
  if (c.latent_moe_use_norm) {
    kernels::rms_norm_on_backend(y, n, latent, w.latent_norm.data, c.rms_norm_eps, normed, pool);
    y = normed;
  }
  lin(w.latent_up, y, n, out, pool);
  // Spilled, m.shared holds nothing (no offset into it: UB on its null data).
  const float* shared = staged;
  if (m.spill) m.spill->read(m.spill_offset + r0 * hidden * sizeof(float), staged, n * hidden * sizeof(float));
  else shared = m.shared.data() + r0 * hidden;
  for (size_t i = 0; i < n * hidden; ++i) out[i] += shared[i];
}

}  // namespace k3
