#include "model/situ_mlp.h"

#include <vector>

#include "model/linear.h"

namespace k3 {

namespace {

template <typename M>
void run(const M& gate, const M& up, const M& down, const SituParams& p, const float* x, size_t n, float* out,
         ThreadPool* pool, float* scratch) {
  const size_t inter = out_dim(gate);
  std::vector<float> own;
  if (!scratch) {
    own.resize(situ_scratch_floats(n, inter));
    scratch = own.data();
  }
  float* g = scratch;
  float* u = scratch + n * inter;
  lin(gate, x, n, g, pool);
  lin(up, x, n, u, pool);
  kernels::situ_inplace(g, u, n * inter, p, pool);
  lin(down, g, n, out, pool);
}

}  // namespace

void situ_mlp(const DenseMlpWeights& w, const SituParams& p, const float* x, size_t n, float* out, ThreadPool* pool,
              float* scratch) {
  run(w.gate_proj, w.up_proj, w.down_proj, p, x, n, out, pool, scratch);
}

void situ_mlp(const ExpertWeights& w, const SituParams& p, const float* x, size_t n, float* out, ThreadPool* pool,
              float* scratch) {
  run(w.w1, w.w3, w.w2, p, x, n, out, pool, scratch);
}

}  // namespace k3
