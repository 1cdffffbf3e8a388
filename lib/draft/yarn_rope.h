// The draft's rotary embedding: DeepSeek-style YaRN frequencies over
// interleaved pairs (dims 2i, 2i+1 rotate together), as the DSpark draft was
// trained (docs/dspark.md). K3's own MLA is NoPE; this is the draft's alone.
#pragma once

#include <cstdint>
#include <vector>

#include "draft/dspark_config.h"

namespace k3 {

class YarnRope {
 public:
  explicit YarnRope(const DSparkConfig& config);

  // Rotates `x` (qk_rope_head_dim floats) in place for absolute position `pos`.
  void rotate(float* x, int64_t pos) const;

  // Softmax scale of the attention scores: qk_head_dim^-1/2 times the YaRN
  // mscale(mscale_all_dim) squared.
  float softmax_scale() const { return softmax_scale_; }

 private:
  std::vector<double> inv_freq_;  // one per pair
  double magnitude_ = 1;          // cos/sin factor: mscale(mscale) / mscale(mscale_all_dim)
  float softmax_scale_ = 1;
};

}  // namespace k3
