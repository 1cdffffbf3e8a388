// Everything carried from one token to the next for one sequence.
//
// KDA layers carry a fixed-size recurrent state and three conv carries; MLA
// layers carry the compressed latent of every past position. Nothing else
// crosses tokens (the AttnRes stack is rebuilt per token). State files
// (--state-out/--state-in) serialise exactly this struct.
#pragma once

#include <cstdint>
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

struct MlaCache {
  // Per position p: kv_lora_rank floats of rms(c, kv_a_layernorm) followed
  // by qk_rope_head_dim floats of k_r, at latent[p * (kv_lora + rope)].
  std::vector<float> latent;
};

struct LayerState {
  KdaState kda;  // used when the layer is KDA
  MlaCache mla;  // used when the layer is MLA
};

struct SequenceState {
  int64_t positions = 0;          // tokens already processed
  std::vector<int32_t> tokens;    // their ids, in order
  std::vector<LayerState> layers; // one per decoder layer
};

}  // namespace k3
