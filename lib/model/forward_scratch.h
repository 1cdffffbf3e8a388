// The scratch memory of the forward pass: the residual stream, the rows each
// decoder layer works on, and the temporaries of the ops (KDA, MLA, LatentMoE,
// the MLPs, the head), in one object the engine owns and reuses for every
// pass. It is sized from the config and the rows of the pass, and grows only
// when a pass has more rows (or MLA a longer context) than any before, so a
// decode step allocates nothing. Memory is reused, never shared: ops run one
// at a time, and threads inside an op get disjoint per-slot pieces.
//
// The values written never depend on where they live, so logits stay
// bit-identical with a fresh, a reused or a larger scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/config.h"

namespace k3 {

class ChunkBlocks;

// The residual stream of one pass (SPEC section 2, "Decoder layer i"): p, the
// running sum of the current block, and B, the stack of finished block
// states, each [n, hidden]. Both are per token; nothing of them crosses
// tokens. The memory belongs to the ForwardScratch.
struct ResidualStream {
  size_t n = 0;                      // token rows
  float* p = nullptr;                // [n, hidden]; meaningless while p_none
  bool p_none = false;               // "p = none" right after a block boundary
  std::vector<const float*> blocks;  // B, each [n, hidden]
  // A layer-major chunk's B instead of `blocks` (model/prefill_chunk.h): the
  // first chunk_block_count block states, this stream's rows being the
  // chunk's from chunk_row0 on. They are fetched a piece of rows at a time
  // (ChunkBlocks::piece_rows: a spilled chunk stages no more), so the layer
  // mixes them a piece at a time (decoder_layer.h).
  ChunkBlocks* chunk_blocks = nullptr;
  size_t chunk_row0 = 0, chunk_block_count = 0;
  size_t block_count() const { return chunk_blocks ? chunk_block_count : blocks.size(); }
};

class ForwardScratch {
 public:
  // Makes room for a pass of `rows` rows whose longest sequence reaches
  // `positions` positions, split over `workers` threads: afterwards such a
  // pass allocates nothing. MLA's context is rounded up to a power of two, so
  // decode steps grow it only when the context passes one (from 4096 on).
  // Never shrinks.
  void reserve(const ModelConfig& c, size_t rows, int64_t positions, size_t workers);

  // Starts a pass of n rows: p sized [n, hidden] (its contents are the
  // caller's to write) and no block states.
  ResidualStream& begin_pass(const ModelConfig& c, size_t n);
  // Starts a layer-major chunk's sub-batches of at most `n` rows whose B is
  // `blocks`: x and a sized [n, hidden], h only one of the blocks' pieces
  // (the layer mixes a piece at a time), and no p of its own (the caller
  // points p at the chunk's rows).
  ResidualStream& begin_chunk_pass(const ModelConfig& c, size_t n, ChunkBlocks& blocks);
  // Frees the row buffers and the op areas (not the expert lists): after a
  // chunk's sub-batches, where the memory they grew to was lent
  // (WeightSource::lend_for_chunk), before reserve() takes a batch's again.
  void release_rows();
  ResidualStream& stream() { return stream_; }
  // Closes a block: copies p into the next block state of the stream.
  void push_block(const ModelConfig& c);

  // The decoder layer's rows, [n, hidden] each: h (the mixed stream; in a
  // chunk, one piece of it), x (its norm) and a (an op's output).
  float* h() { return h_.data(); }
  float* x() { return x_.data(); }
  float* a() { return a_.data(); }
  // attn_res_mix's scratch: hidden + (block states + 1) floats.
  float* mix() { return mix_.data(); }

  // One op's temporaries, valid until the next call of the same function
  // (which may move them): an op asks once for all it needs and carves it up.
  float* op_floats(size_t count) { return grow(op_floats_, count); }
  int32_t* op_ints(size_t count) { return grow(op_ints_, count); }
  size_t* op_indices(size_t count) { return grow(op_indices_, count); }
  // LatentMoE's distinct experts of a pass (WeightSource takes a vector).
  std::vector<int>& experts() { return experts_; }
  // The next layer's guessed experts (--expert-lookahead).
  std::vector<int>& guessed_experts() { return guessed_experts_; }

  // How many times a buffer was allocated or moved: a decode step that fits
  // what was reserved adds none.
  uint64_t growths() const { return growths_; }
  // Bytes held.
  uint64_t bytes() const;
  // Fills every buffer with NaN (and the index buffers with their largest
  // value), so a test shows any op that reads scratch before writing it.
  void poison();

 private:
  template <typename T>
  T* grow(std::vector<T>& v, size_t count) {
    if (v.size() < count) {
      v.resize(count);
      ++growths_;
    }
    return v.data();
  }

  ResidualStream stream_;
  std::vector<float> p_;              // [rows, hidden]: the running sum p
  std::vector<float> blocks_;         // [block states, rows, hidden]: B
  std::vector<float> h_, x_, a_;      // [rows, hidden] each: mixed stream, its norm, an op's output
  std::vector<float> mix_;            // [hidden + block states + 1]: attn_res_mix's scratch
  std::vector<float> op_floats_;      // [largest op's need]: one op's float temporaries
  std::vector<int32_t> op_ints_;      // [largest op's need]: one op's int temporaries
  std::vector<size_t> op_indices_;    // [largest op's need]: one op's row indices
  std::vector<int> experts_;          // [distinct experts of the pass]
  std::vector<int> guessed_experts_;  // [experts_per_token]: the next layer's guessed experts (--expert-lookahead)
  uint64_t growths_ = 0;
};

// Block states a pass of this config closes (one per attn_res_block_size layers).
size_t residual_block_count(const ModelConfig& c);

// Carves consecutive pieces out of one scratch area, each starting on a
// 64-byte boundary relative to the area (kernels load rows with vectors).
template <typename T>
class ScratchCarver {
 public:
  explicit ScratchCarver(T* base) : next_(base) {}
  T* take(size_t count) {
    T* r = next_;
    next_ += padded(count);
    return r;
  }
  // What take() of these counts uses in all.
  static size_t padded(size_t count) {
    constexpr size_t kAlign = 64 / sizeof(T) > 0 ? 64 / sizeof(T) : 1;
    return (count + kAlign - 1) / kAlign * kAlign;
  }

 private:
  T* next_;
};

}  // namespace k3
