#include "model/forward_scratch.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "model/kda.h"
#include "model/latent_moe.h"
#include "model/mla.h"
#include "model/prefill_chunk.h"
#include "model/situ_mlp.h"

namespace k3 {

namespace {

// MLA scores are reserved for at least this many positions (16 KB per
// thread), so short conversations never grow them.
constexpr int64_t kMinMlaContext = 4096;

}  // namespace

size_t residual_block_count(const ModelConfig& c) {
  // Layer i closes a block when i % attn_res_block_size == 0.
  const size_t layers = static_cast<size_t>(c.num_hidden_layers), size = static_cast<size_t>(c.attn_res_block_size);
  return size == 0 ? 0 : (layers + size - 1) / size;
}

void ForwardScratch::reserve(const ModelConfig& c, size_t rows, int64_t positions, size_t workers) {
  rows = std::max<size_t>(rows, 1);
  workers = std::max<size_t>(workers, 1);
  const size_t hidden = c.hidden_size, blocks = residual_block_count(c);
  grow(p_, rows * hidden);
  grow(h_, rows * hidden);
  grow(x_, rows * hidden);
  grow(a_, rows * hidden);
  grow(blocks_, blocks * rows * hidden);
  grow(mix_, hidden + blocks + 1);
  if (stream_.blocks.capacity() < blocks) {
    stream_.blocks.reserve(blocks);
    ++growths_;
  }

  size_t floats = 0, ints = 0, indices = 0;
  if (c.num_kda_layers() > 0) floats = std::max(floats, kda_scratch_floats(c, rows, workers));
  if (c.num_mla_layers() > 0) {
    const size_t context = std::bit_ceil(static_cast<size_t>(std::max<int64_t>(positions, kMinMlaContext)));
    floats = std::max(floats, mla_scratch_floats(c, rows, context, workers));
    indices = std::max(indices, mla_scratch_indices(rows));
  }
  if (c.first_k_dense_replace > 0)
    floats = std::max(floats, situ_scratch_floats(rows, static_cast<size_t>(c.intermediate_size)));
  if (c.first_k_dense_replace < c.num_hidden_layers) {
    floats = std::max(floats, latent_moe_scratch_floats(c, rows));
    ints = std::max(ints, latent_moe_scratch_ints(c, rows));
    indices = std::max(indices, latent_moe_scratch_indices(c, rows));
    const size_t experts = std::min<size_t>(c.num_experts, rows * c.num_experts_per_token);
    for (std::vector<int>* v : {&experts_, &guessed_experts_})
      if (v->capacity() < experts) {
        v->reserve(experts);
        ++growths_;
      }
  }
  grow(op_floats_, floats);
  grow(op_ints_, ints);
  grow(op_indices_, indices);
}

void ForwardScratch::release_rows() {
  // Swapped with empty vectors: clear() would keep the capacity.
  for (std::vector<float>* v : {&p_, &blocks_, &h_, &x_, &a_, &op_floats_}) std::vector<float>().swap(*v);
  std::vector<int32_t>().swap(op_ints_);
  std::vector<size_t>().swap(op_indices_);
  stream_ = ResidualStream{};
  ++growths_;
}

ResidualStream& ForwardScratch::begin_pass(const ModelConfig& c, size_t n) {
  const size_t size = n * c.hidden_size;
  grow(h_, size);
  grow(x_, size);
  grow(a_, size);
  grow(mix_, c.hidden_size + residual_block_count(c) + 1);
  stream_.n = n;
  stream_.p = grow(p_, size);
  stream_.p_none = false;
  stream_.blocks.clear();
  stream_.chunk_blocks = nullptr;
  return stream_;
}

ResidualStream& ForwardScratch::begin_chunk_pass(const ModelConfig& c, size_t n, ChunkBlocks& blocks) {
  const size_t hidden = c.hidden_size;
  grow(h_, blocks.piece_rows() * hidden);
  grow(x_, n * hidden);
  grow(a_, n * hidden);
  grow(mix_, hidden + residual_block_count(c) + 1);
  stream_.n = n;
  stream_.p = nullptr;
  stream_.p_none = false;
  stream_.blocks.clear();
  stream_.chunk_blocks = &blocks;
  stream_.chunk_row0 = stream_.chunk_block_count = 0;
  return stream_;
}

void ForwardScratch::push_block(const ModelConfig& c) {
  const size_t size = stream_.n * c.hidden_size, j = stream_.blocks.size();
  // Block states live side by side; growing moves the earlier ones, so their
  // pointers are refreshed (a reserved pass never grows here).
  const float* before = blocks_.data();
  float* base = grow(blocks_, (j + 1) * size);
  if (base != before)
    for (size_t i = 0; i < j; ++i) stream_.blocks[i] = base + i * size;
  std::copy_n(stream_.p, size, base + j * size);
  stream_.blocks.push_back(base + j * size);
}

void ForwardScratch::poison() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::vector<float>* v : {&p_, &blocks_, &h_, &x_, &a_, &mix_, &op_floats_}) std::fill(v->begin(), v->end(), nan);
  std::fill(op_ints_.begin(), op_ints_.end(), std::numeric_limits<int32_t>::max());
  std::fill(op_indices_.begin(), op_indices_.end(), std::numeric_limits<size_t>::max());
}

uint64_t ForwardScratch::bytes() const {
  const size_t floats =
      p_.size() + blocks_.size() + h_.size() + x_.size() + a_.size() + mix_.size() + op_floats_.size();
  return floats * sizeof(float) + op_ints_.size() * sizeof(int32_t) + op_indices_.size() * sizeof(size_t) +
         (experts_.capacity() + guessed_experts_.capacity()) * sizeof(int);
}

}  // namespace k3
