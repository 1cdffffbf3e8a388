// LatentMoE over a layer-major prefill chunk (model/prefill_chunk.h): the
// rows of a chunk pass through a MoE layer in sub-batches for everything
// that reads only trunk weights (router, latent projection, shared experts,
// the final norm and up projection), while each routed expert any row chose
// is requested from the WeightSource once for the whole chunk and computed
// for all the rows that chose it. The arithmetic per token is
// latent_moe_forward's (model/latent_moe.h): routing, each expert's SiTU MLP
// on the token's latent row, the sum in ascending expert id
// (model/expert_sum.h), the norm and the up projection, then the shared
// experts added; matrix products give the same bits for any number of rows
// (kernels/matmul.h), so the output is bit-identical to latent_moe_forward
// over any split of the rows.
//
// The experts run in groups of consecutive ids (ascending) whose outputs
// together fill at most one latent row per chunk row; after a group, its
// outputs are added into their tokens' sums in ascending id. So the chunk
// keeps two latent rows per token (the sum and the group's outputs), not
// the k expert outputs of every token, and the order a group's experts are
// delivered in changes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/weight_source.h"

namespace k3 {

class ForwardScratch;
class ThreadPool;

// What a MoE layer keeps per row of the chunk between its three steps.
struct MoeChunkRows {
  std::vector<int32_t> chosen;      // [rows, k]: each row's experts, best first
  std::vector<float> weights;       // [rows, k]: their routing weights
  std::vector<float> z;             // [rows, latent]: the latent projection
  std::vector<float> shared;        // [rows, hidden]: the shared experts' output
  std::vector<float> y;             // [rows, latent]: each row's sum of weighted expert outputs
  std::vector<float> group_out;     // [rows, latent]: one group's expert outputs, entry by entry
  std::vector<size_t> start;        // [experts + 1]: expert e's entries at start[e]..start[e+1]
  std::vector<size_t> expert_rows;  // [rows * k]: per expert, the routing entries (row * k + j) that chose it
  std::vector<int> experts;         // the distinct experts of the chunk (ascending id)
  std::vector<int> group;           // the experts of the group running now

  // Sizes every buffer for `rows` rows (grows only).
  void reserve(const ModelConfig& config, size_t rows);
  // Bytes held per row of a chunk (the memory plan counts them).
  static uint64_t bytes_per_row(const ModelConfig& config);
};

// Step 1, per sub-batch: routes rows [r0, r0 + n) of the chunk on x [n,
// hidden] and stores their latent projection and shared-expert output.
void moe_chunk_prepare(const ModelConfig& config, const MoeTrunkWeights& w, const float* x, size_t n, size_t r0,
                       MoeChunkRows& m, ThreadPool* pool, ForwardScratch& scratch);

// Step 2, once per layer: every expert chosen by some of the chunk's `rows`
// rows is requested once and runs on its rows in pieces of at most
// `sub_batch` rows (the scratch of a sub-batch); the experts go to the
// source in groups (see above), and each row's sum y is complete at the end.
void moe_chunk_experts(const ModelConfig& config, int layer, WeightSource& source, size_t rows, size_t sub_batch,
                       MoeChunkRows& m, ThreadPool* pool, ForwardScratch& scratch);

// Step 3, per sub-batch: out [n, hidden] for rows [r0, r0 + n).
void moe_chunk_combine(const ModelConfig& config, const MoeTrunkWeights& w, size_t n, size_t r0, const MoeChunkRows& m,
                       float* out, ThreadPool* pool, ForwardScratch& scratch);

// Scratch floats (ForwardScratch::op_floats) the steps take for a sub-batch of n rows.
size_t moe_chunk_scratch_floats(const ModelConfig& config, size_t n);

}  // namespace k3
