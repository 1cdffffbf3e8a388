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
// together fill at most one sub-batch of latent rows (one expert with more
// entries than that forms a group alone and adds each piece of its rows into
// their sums as it is computed: a row chooses an expert once); after a
// group, its outputs are added into their tokens' sums in ascending id. So
// the chunk keeps one latent row per token for the sums, and the group's
// outputs take a sub-batch's rows of the op area, not a row per token; the
// order a group's experts are delivered in changes nothing.
//
// With the chunk's block states spilled (model/prefill_chunk.h), the shared
// experts' output goes to the same spill file: written per sub-batch by the
// prepare step, read back in order by the combine step, so it takes no
// memory per token either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/weight_source.h"

namespace k3 {

class ForwardScratch;
class SpillFile;
class ThreadPool;

// What a MoE layer keeps per row of the chunk between its three steps.
struct MoeChunkRows {
  std::vector<int32_t> chosen;      // [rows, k]: each row's experts, best first
  std::vector<float> weights;       // [rows, k]: their routing weights
  std::vector<float> z;             // [rows, latent]: the latent projection
  std::vector<float> shared;        // [rows, hidden]: the shared experts' output (empty when spilled)
  std::vector<float> y;             // [rows, latent]: each row's sum of weighted expert outputs
  std::vector<size_t> start;        // [experts + 1]: expert e's entries at start[e]..start[e+1]
  std::vector<size_t> expert_rows;  // [rows * k]: per expert, the routing entries (row * k + j) that chose it
  std::vector<int> experts;         // the distinct experts of the chunk (ascending id)
  std::vector<int> group;           // the experts of the group running now
  // Spilled: the shared experts' rows [rows, hidden] at this offset of the file.
  SpillFile* spill = nullptr;
  uint64_t spill_offset = 0;

  // Sizes every buffer for `rows` rows (grows only); spill: nullptr keeps
  // the shared experts' output in memory, else it goes to the file at
  // `offset`.
  void reserve(const ModelConfig& config, size_t rows, SpillFile* spill = nullptr, uint64_t offset = 0);
  // Bytes held in memory per row of a chunk (the memory plan counts them).
  static uint64_t bytes_per_row(const ModelConfig& config, bool spilled = false);
  // Bytes per row the spill file takes (the shared experts' output).
  static uint64_t spilled_bytes_per_row(const ModelConfig& config);
};

// Step 1, per sub-batch: routes rows [r0, r0 + n) of the chunk on x [n,
// hidden] and stores their latent projection and shared-expert output (in
// the spill file when spilled: the sub-batches must come in order).
void moe_chunk_prepare(const ModelConfig& config, const MoeTrunkWeights& w, const float* x, size_t n, size_t r0,
                       MoeChunkRows& m, ThreadPool* pool, ForwardScratch& scratch);

// Step 2, once per layer: every expert chosen by some of the chunk's `rows`
// rows is requested once and runs on its rows in pieces of at most
// `sub_batch` rows (the scratch of a sub-batch); the experts go to the
// source in groups (see above), and each row's sum y is complete at the end.
void moe_chunk_experts(const ModelConfig& config, int layer, WeightSource& source, size_t rows, size_t sub_batch,
                       MoeChunkRows& m, ThreadPool* pool, ForwardScratch& scratch);

// Step 3, per sub-batch (in order when spilled): out [n, hidden] for rows
// [r0, r0 + n).
void moe_chunk_combine(const ModelConfig& config, const MoeTrunkWeights& w, size_t n, size_t r0, const MoeChunkRows& m,
                       float* out, ThreadPool* pool, ForwardScratch& scratch);

// Scratch floats (ForwardScratch::op_floats) the steps take for a sub-batch
// of n rows: the router's or an expert's input rows, the widest SiTU MLP's
// temporaries, and n rows of a group's outputs or of the shared experts'
// output on its way to or from the spill file.
size_t moe_chunk_scratch_floats(const ModelConfig& config, size_t n);

}  // namespace k3
