#include "model/situ_mlp.h"

#include <algorithm>
#include <vector>

#include "common/thread_pool.h"
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
  // With a device backend the products go to it whole (lin below).
  if (has_row_access(gate) && has_row_access(up) && !kernels::current_compute_backend()) {
    // Gate, up and the SiTU step in one parallel region, each thread on its
    // own rows of both: one wake-up of the pool instead of two, and the
    // step split too (with libm's expm1/tanh it was 3.7% of a 2-thread
    // decode's samples on the bench checkpoint, all on one thread while the
    // other waited). Every output is computed by the same code as in separate
    // products, so the bits do not change.
    auto rows = [&](size_t b, size_t e) {
      lin_rows(gate, x, n, g, b, e);
      lin_rows(up, x, n, u, b, e);
      // situ_span's bits do not depend on where a span starts, so a row
      // range per token is the whole step's (and the streamed path's) bits.
      for (size_t t = 0; t < n; ++t) kernels::situ_span(g + t * inter + b, u + t * inter + b, e - b, p);
    };
    // Two products per row: half the rows of one make a chunk worth a thread.
    const size_t grain = std::max<size_t>(1, kernels::matmul_row_grain(in_dim(gate), n) / 2);
    parallel_for(pool, inter, grain, rows);
  } else {  // a streamed matrix is read block by block, whole
    lin(gate, x, n, g, pool);
    lin(up, x, n, u, pool);
    kernels::situ_inplace_on_backend(g, u, n * inter, p, pool);
  }
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
