#include "model/prefill_chunk.h"

#include <algorithm>
#include <bit>

#include "common/error.h"
#include "io/spill_file.h"
#include "kernels/attn_res.h"
#include "kernels/compute_backend.h"
#include "model/forward_scratch.h"
#include "model/kda.h"
#include "model/mla.h"
#include "model/situ_mlp_chunk.h"

namespace k3 {

void ChunkBlocks::begin(const ModelConfig& c, size_t rows, size_t piece, SpillFile* spill) {
  rows_ = rows;
  hidden_ = static_cast<size_t>(c.hidden_size);
  piece_ = std::min(std::max<size_t>(1, piece), std::max<size_t>(1, rows));
  spill_ = spill;
  count_ = staged_m_ = staged_count_ = 0;
  const size_t need = residual_block_count(c) * hidden_ * (spill ? piece_ : rows);
  if (mem_.size() < need) mem_.resize(need);
  device_ = kernels::current_compute_backend();
  keepable_ = device_ ? device_->begin_chunk_blocks(rows_, hidden_, residual_block_count(c)) : 0;
  kept_ = 0;
}

void ChunkBlocks::open(const float* p) {
  const size_t size = rows_ * hidden_;
  if (spill_) spill_->write(static_cast<uint64_t>(count_) * size * sizeof(float), p, size * sizeof(float));
  else std::copy_n(p, size, mem_.data() + count_ * size);
  // The device keeps the first blocks, in order, while they fit.
  if (kept_ == count_ && kept_ < keepable_ && device_->keep_chunk_block(count_, p)) ++kept_;
  ++count_;
}

void ChunkBlocks::mix(size_t r0, size_t m, size_t count, const float* p, const uint16_t* proj, const float* norm,
                      float eps, float* out, float* scratch) {
  const size_t kept = std::min(count, kept_);
  if (kept > 0) {
    // Only the blocks past the kept ones come from memory or the file.
    const float* const* rest = kept < count ? rows(r0, m, count).data() : nullptr;
    if (device_->attn_res_mix_kept(kept, rest, count, r0, p, m, hidden_, proj, norm, eps, out)) return;
  }
  kernels::attn_res_mix_on_backend(rows(r0, m, count), p, m, hidden_, proj, norm, eps, out, scratch);
}

const std::vector<const float*>& ChunkBlocks::rows(size_t r0, size_t m, size_t count) {
  out_.clear();
  if (!spill_) {
    for (size_t j = 0; j < count; ++j) out_.push_back(mem_.data() + (j * rows_ + r0) * hidden_);
    return out_;
  }
  if (m > piece_ || r0 + m > rows_ || count > count_)
    throw Error(ExitCode::kInternal, "the chunk's block states were asked for rows it does not stage");
  // A block's state never changes once opened: rows staged by the last call
  // are still good.
  const bool same = r0 == staged_r0_ && m == staged_m_;
  const size_t first = same ? std::min(count, staged_count_) : 0;
  for (size_t j = 0; j < count; ++j) {
    // Block j's rows [r0, r0 + m): consecutive in the file, so successive
    // pieces read each block front to back.
    float* staged = mem_.data() + j * piece_ * hidden_;
    if (j >= first)
      spill_->read((static_cast<uint64_t>(j) * rows_ + r0) * hidden_ * sizeof(float), staged,
                   m * hidden_ * sizeof(float));
    out_.push_back(staged);
  }
  staged_r0_ = r0;
  staged_m_ = m;
  staged_count_ = same ? std::max(staged_count_, count) : count;
  return out_;
}

void PrefillChunk::reserve(const ModelConfig& c, size_t rows, size_t piece, SpillFile* spill) {
  const size_t row = static_cast<size_t>(c.hidden_size) * rows;
  if (p.size() < row) p.resize(row);
  blocks.begin(c, rows, piece, spill);
  // The spill file: every block state, then the MoE layer's shared rows.
  const uint64_t shared_at = residual_block_count(c) * static_cast<uint64_t>(row) * sizeof(float);
  if (c.first_k_dense_replace < c.num_hidden_layers) moe.reserve(c, rows, spill, shared_at);
}

uint64_t PrefillChunk::bytes() const {
  return (p.size() + moe.z.size() + moe.shared.size() + moe.y.size() + moe.weights.size()) * sizeof(float) +
         blocks.bytes() + moe.chosen.size() * sizeof(int32_t) +
         (moe.expert_rows.size() + moe.start.size()) * sizeof(size_t);
}

uint64_t spilled_block_bytes_per_token(const ModelConfig& c) {
  return residual_block_count(c) * static_cast<uint64_t>(c.hidden_size) * sizeof(float);
}

uint64_t spill_file_bytes_per_token(const ModelConfig& c) {
  const bool moe = c.first_k_dense_replace < c.num_hidden_layers;
  return spilled_block_bytes_per_token(c) + (moe ? MoeChunkRows::spilled_bytes_per_row(c) : 0);
}

uint64_t prefill_chunk_staging_bytes(const ModelConfig& c, uint64_t sub_batch) {
  return std::min<uint64_t>(sub_batch, kChunkPieceRows) * spilled_block_bytes_per_token(c);
}

size_t prefill_sub_batch_op_floats(const ModelConfig& c, size_t rows, int64_t positions, size_t workers) {
  // The one op area the largest op takes (MLA's context rounded as
  // ForwardScratch::reserve does).
  const size_t n = std::max<size_t>(rows, 1), w = std::max<size_t>(workers, 1);
  size_t floats = 0;
  if (c.num_kda_layers() > 0) floats = std::max(floats, kda_scratch_floats(c, n, w));
  if (c.num_mla_layers() > 0) {
    const size_t context = std::bit_ceil(static_cast<size_t>(std::max<int64_t>(positions, 4096)));
    floats = std::max(floats, mla_scratch_floats(c, n, context, w));
  }
  if (c.first_k_dense_replace > 0)
    floats = std::max(floats, situ_chunk_scratch_floats(n, static_cast<size_t>(c.intermediate_size), kChunkPieceRows));
  if (c.first_k_dense_replace < c.num_hidden_layers) floats = std::max(floats, moe_chunk_scratch_floats(c, n));
  return floats;
}

uint64_t prefill_sub_batch_scratch_bytes(const ModelConfig& c, uint64_t rows, int64_t positions) {
  // What ForwardScratch holds for a chunk's sub-batch (begin_chunk_pass):
  // x and a, h for a piece of rows, the op area, MLA's two row indices.
  const size_t n = static_cast<size_t>(std::max<uint64_t>(rows, 1));
  const uint64_t floats = prefill_sub_batch_op_floats(c, n, positions, 1);
  const uint64_t row_floats = (2 * n + std::min<uint64_t>(n, kChunkPieceRows)) * static_cast<uint64_t>(c.hidden_size);
  return (row_floats + floats) * sizeof(float) + 2 * n * sizeof(size_t);
}

uint64_t prefill_chunk_bytes_per_token(const ModelConfig& c, bool spilled) {
  const uint64_t p = static_cast<uint64_t>(c.hidden_size) * sizeof(float);
  const bool moe = c.first_k_dense_replace < c.num_hidden_layers;
  return p + (spilled ? 0 : spilled_block_bytes_per_token(c)) + (moe ? MoeChunkRows::bytes_per_row(c, spilled) : 0);
}

}  // namespace k3
