// The MoE router: sigmoid scores on x, top-k by score + correction bias.
//
//   s      = sigmoid(router_logits)
//   choice = s + e_score_correction_bias
//   E      = top-k experts by choice; ties go to the lower expert id
//   w_e    = s_e (the sigmoid score, not s + bias)
//   if moe_renormalize and k > 1: w_e /= (sum over E of w + 1e-20)
//   w_e   *= routed_scaling_factor
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/config.h"

namespace k3 {

// router_logits[n, num_experts] -> experts[n, k] (best first) and weights[n, k].
// `scratch` holds 2 * num_experts floats and `order` num_experts ids (null:
// allocated here).
void route_tokens(const ModelConfig& config, const float* router_logits, const float* bias, size_t n, int32_t* experts,
                  float* weights, float* scratch = nullptr, int32_t* order = nullptr);

}  // namespace k3
