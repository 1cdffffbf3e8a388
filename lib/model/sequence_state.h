// Everything carried from one token to the next for one sequence.
//
// KDA layers carry a fixed-size recurrent state and three conv carries; MLA
// layers carry the compressed latent of every past position. Nothing else
// crosses tokens (the AttnRes stack is rebuilt per token). State files
// (--state-out/--state-in) serialise exactly this struct.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace k3 {

struct KdaState {
  // Per head h: S_h is D x D (row = key index, column = value index),
  // stored at S[h*D*D + key*D + value]. FP32.
  std::vector<float> S;
  // The (K-1) previous raw projection outputs (before conv and silu), oldest
  // first: conv_q[j*H*D + c] is the j-th oldest. Zero for a new sequence.
  std::vector<float> conv_q, conv_k, conv_v;
};

// A value no MlaCache has had before (new_mla_generation): process-wide,
// from 1 up.
inline uint64_t new_mla_generation() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

struct MlaCache {
  // Per position p: kv_lora_rank floats of rms(c, kv_a_layernorm) followed
  // by qk_rope_head_dim floats of k_r, at latent[p * (kv_lora + rope)].
  std::vector<float> latent;
  // Names these rows for a compute device's copy of them (the chunk's
  // attention keeps one per cache and uploads only rows appended since):
  // unchanged while rows are only appended, new after anything else. So a
  // new cache, a copy (the copy is another cache: it may be cut and grown
  // apart from the original) and a cache that rows were cut from
  // (mla_truncate: rollback of rejected drafts, a stopped pass put back)
  // each get a new one; a moved cache keeps its name and the moved-from one
  // gets a new one.
  uint64_t generation = new_mla_generation();

  MlaCache() = default;
  MlaCache(const MlaCache& other) : latent(other.latent) {}
  MlaCache& operator=(const MlaCache& other) {
    latent = other.latent;
    generation = new_mla_generation();
    return *this;
  }
  MlaCache(MlaCache&& other) noexcept : latent(std::move(other.latent)), generation(other.generation) {
    other.latent.clear();
    other.generation = new_mla_generation();
  }
  MlaCache& operator=(MlaCache&& other) noexcept {
    latent = std::move(other.latent);
    generation = other.generation;
    other.latent.clear();
    other.generation = new_mla_generation();
    return *this;
  }
};

struct LayerState {
  KdaState kda;  // used when the layer is KDA
  MlaCache mla;  // used when the layer is MLA
};

// What a multi-row forward pass of one sequence records so the state can be
// rolled back to just after any of its rows (speculative verification:
// rejected draft rows must leave no trace). Per KDA layer: the recurrent state
// after each row but the last, and the conv inputs of the pass (the carry
// rows then the new raw rows), from which the carry after any row is cut.
// MLA layers need nothing: their cache is truncated.
struct KdaRowHistory {
  size_t rows = 0;
  std::vector<float> S;                       // [rows - 1][H*D*D]: S after row t at t*H*D*D
  std::vector<float> conv_q, conv_k, conv_v;  // [K-1 + rows][H*D]
};
struct RowHistory {
  size_t rows = 0;                    // rows of the recorded pass
  std::vector<KdaRowHistory> layers;  // one per decoder layer (empty for MLA layers)
};

// The rows [begin, begin + count) of a forward pass that belong to one
// sequence, with that sequence's layer state (batches of sequences: the rows
// of each sequence are consecutive). `history`, when set, records the rows.
struct LayerSegment {
  LayerState* state = nullptr;
  size_t begin = 0, count = 0;
  KdaRowHistory* history = nullptr;
};

// Runs a layer function written for segments over the n rows of one
// sequence whose layer state is `part` (a KdaState or an MlaCache, the
// `member` of LayerState): the single-sequence entry points of the layers.
template <typename Part, typename Fn>
void run_one_sequence(Part LayerState::*member, Part& part, size_t n, Fn&& fn) {
  LayerState holder;
  holder.*member = std::move(part);
  const LayerSegment one{&holder, 0, n, nullptr};
  try {
    fn(std::span<const LayerSegment>(&one, 1));
  } catch (...) {
    part = std::move(holder.*member);
    throw;
  }
  part = std::move(holder.*member);
}

struct SequenceState {
  int64_t positions = 0;           // tokens already processed
  std::vector<int32_t> tokens;     // their ids, in order
  std::vector<LayerState> layers;  // one per decoder layer
};

}  // namespace k3
