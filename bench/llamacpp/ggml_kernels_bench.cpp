// k3-bench-ggml: k3's matmul kernels against ggml's CPU backend (the kernels
// llama.cpp runs on a CPU) on the same weights, at Kimi-K3's expert and
// attention shapes, for the same thread counts, calls interleaved, medians.
// Prints figures only; asserts nothing except that both sides hold the same
// weights. Not part of the default build: see bench/llamacpp/README.md.
//
//   k3-bench-ggml [--reps N] [--threads "1 2"] [--only TEXT] [--quick]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "bench_usage.h"
#include "common/thread_pool.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "kernels/bf16.h"
#include "kernels/matmul.h"
#include "kernels/mxfp4.h"

namespace {

using Clock = std::chrono::steady_clock;

// CPU time of the whole process (all threads): on a busy machine it shows
// the work done, where wall time also counts waiting for a core. (ggml's
// OpenMP workers spin while they wait, which this counts as work.)
double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The machine is shared: every figure is printed with the 1-minute load.
double load_average() {
  double l = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = -1;
    std::fclose(f);
  }
  return l;
}

struct Shape {
  const char* name;
  bool mxfp4;
  size_t rows, cols;
  std::vector<size_t> ns;  // tokens per call: decode, then prefill-like
};

// One row from compressed-tensors MXFP4 (byte b holds columns 2b and 2b+1,
// scales in their own array) to ggml's block_mxfp4 (per 32 columns: the
// scale byte, then 16 bytes whose low nibble is column j and high nibble
// column j+16). Both use the same E2M1 codes and E8M0 scales, so the
// conversion only moves nibbles: the weights stay exactly the same.
void to_ggml_mxfp4_row(const uint8_t* packed, const uint8_t* scales, size_t cols, uint8_t* out) {
  for (size_t g = 0; g < cols / 32; ++g) {
    uint8_t* blk = out + g * 17;
    blk[0] = scales[g];
    auto code = [&](size_t c) {
      const uint8_t b = packed[(g * 32 + c) / 2];
      return static_cast<uint8_t>(c % 2 ? b >> 4 : b & 0x0F);
    };
    for (size_t j = 0; j < 16; ++j) blk[1 + j] = static_cast<uint8_t>(code(j) | code(j + 16) << 4);
  }
}

// ggml's CPU buffer types: the plain one, and the repacking one llama.cpp
// puts weights in by default (interleaved rows; on AVX2 it takes MXFP4).
std::vector<ggml_backend_buffer_type_t> ggml_weight_buffer_types(bool mxfp4) {
  std::vector<ggml_backend_buffer_type_t> out = {ggml_backend_cpu_buffer_type()};
  if (!mxfp4) return out;
  ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  auto get_extra = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
      ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(dev), "ggml_backend_dev_get_extra_bufts"));
  for (auto* b = get_extra ? get_extra(dev) : nullptr; b && *b; ++b) {
    if (std::strstr(ggml_backend_buft_name(*b), "REPACK")) out.push_back(*b);
  }
  return out;
}

// Weight copies of one shape, ours and ggml's (one set per buffer type).
struct Weights {
  std::vector<std::vector<uint16_t>> bf16;
  std::vector<std::vector<uint8_t>> packed, scales;
  std::vector<ggml_backend_buffer_type_t> bufts;
  std::vector<ggml_context*> ctx;                  // per buffer type
  std::vector<ggml_backend_buffer_t> buf;          // per buffer type
  std::vector<std::vector<ggml_tensor*>> tensors;  // [buffer type][copy]
  ~Weights() {
    for (auto* b : buf) ggml_backend_buffer_free(b);
    for (auto* c : ctx) ggml_free(c);
  }
};

void make_weights(const Shape& s, size_t copies, std::mt19937& rng, Weights& w) {
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<uint8_t> row_blocks(s.cols / 32 * 17);
  std::vector<uint8_t> ggml_mx(s.mxfp4 ? s.rows * row_blocks.size() : 0);
  w.bufts = ggml_weight_buffer_types(s.mxfp4);
  for (size_t v = 0; v < w.bufts.size(); ++v) {
    ggml_init_params p = {ggml_tensor_overhead() * copies + 1024, nullptr, true};
    w.ctx.push_back(ggml_init(p));
    w.tensors.emplace_back();
    for (size_t k = 0; k < copies; ++k) {
      w.tensors[v].push_back(ggml_new_tensor_2d(w.ctx[v], s.mxfp4 ? GGML_TYPE_MXFP4 : GGML_TYPE_BF16,
                                                static_cast<int64_t>(s.cols), static_cast<int64_t>(s.rows)));
    }
    w.buf.push_back(ggml_backend_alloc_ctx_tensors_from_buft(w.ctx[v], w.bufts[v]));
  }
  for (size_t k = 0; k < copies; ++k) {
    if (s.mxfp4) {
      // Random codes, scale bytes in a normal range (2^-7 .. 2^2).
      w.packed.emplace_back(s.rows * s.cols / 2);
      w.scales.emplace_back(s.rows * s.cols / 32);
      for (auto& b : w.packed[k]) b = static_cast<uint8_t>(rng());
      for (auto& b : w.scales[k]) b = static_cast<uint8_t>(120 + rng() % 10);
      for (size_t r = 0; r < s.rows; ++r) {
        to_ggml_mxfp4_row(w.packed[k].data() + r * s.cols / 2, w.scales[k].data() + r * s.cols / 32, s.cols,
                          ggml_mx.data() + r * row_blocks.size());
      }
      for (auto& t : w.tensors) ggml_backend_tensor_set(t[k], ggml_mx.data(), 0, ggml_mx.size());
    } else {
      w.bf16.emplace_back(s.rows * s.cols);
      for (auto& x : w.bf16[k]) x = k3::kernels::f32_to_bf16(uni(rng));
      for (auto& t : w.tensors) ggml_backend_tensor_set(t[k], w.bf16[k].data(), 0, w.bf16[k].size() * 2);
    }
  }
}

// Same weights on both sides: ggml's own MXFP4 decoder on the converted
// rows gives exactly our decoder's values, for every row of copy 0 (compared
// with ==, not memcmp: code 8 is -0.0 for us and +0.0 for ggml).
bool same_mxfp4_weights(const Shape& s, const Weights& w) {
  const auto* traits = ggml_get_type_traits(GGML_TYPE_MXFP4);
  std::vector<uint8_t> blocks(s.cols / 32 * 17);
  std::vector<float> ours(s.cols), theirs(s.cols);
  for (size_t r = 0; r < s.rows; ++r) {
    const uint8_t* p = w.packed[0].data() + r * s.cols / 2;
    const uint8_t* sc = w.scales[0].data() + r * s.cols / 32;
    to_ggml_mxfp4_row(p, sc, s.cols, blocks.data());
    k3::kernels::dequantize_mxfp4_row(p, sc, s.cols, ours.data());
    traits->to_float(blocks.data(), theirs.data(), static_cast<int64_t>(s.cols));
    if (!std::equal(ours.begin(), ours.end(), theirs.begin())) return false;
  }
  return true;
}

// The largest |a - ref| over the largest |ref|: ggml rounds the activations
// (to Q8_0 for MXFP4 weights, to BF16 for BF16 weights); k3 keeps them FP32.
double relative_error(const float* a, const float* ref, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; ++i) {
    d = std::max(d, std::fabs(static_cast<double>(a[i]) - ref[i]));
    m = std::max(m, std::fabs(static_cast<double>(ref[i])));
  }
  return m > 0 ? d / m : d;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: k3-bench-ggml [--reps N] [--threads \"1 2\"] [--only TEXT] [--quick]\n"
      "  Times k3's BF16/MXFP4 matmul against ggml's CPU backend (plain and\n"
      "  repacked weight buffers) on the same weights at Kimi-K3 shapes; calls\n"
      "  interleaved, medians, weight GB/s and GFLOP/s from exact counts.\n";
  if (auto status = k3::bench::answer_help_or_version(argc, argv, "k3-bench-ggml", usage)) return *status;
  int reps = 7;
  bool quick = false;
  std::string only;
  std::vector<int> thread_counts = {1, 2};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--threads" && i + 1 < argc) {
      thread_counts = k3::bench::parse_thread_counts(argv[++i]);
      if (thread_counts.empty()) return k3::bench::usage_error(usage);
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--quick") {
      quick = true;
    } else {
      return k3::bench::usage_error(usage);
    }
  }

  // K3's shapes (SPEC.md): a routed expert's w1/w3 [3072, 3584] and w2
  // [3584, 3072] in MXFP4, seen by 1 token in decode and a few per expert in
  // a prefill batch; a KDA layer's q/k/v_proj [12288, 7168] and o_proj
  // [7168, 12288] in BF16, seen by every token of a batch (k3's is 256).
  std::vector<Shape> shapes = {
      {"mxfp4 expert w1/w3 3072x3584", true, 3072, 3584, {1, 4, 16}},
      {"mxfp4 expert w2 3584x3072", true, 3584, 3072, {1, 4, 16}},
      {"bf16 kda q_proj 12288x7168", false, 12288, 7168, {1, 16, 256}},
      {"bf16 kda o_proj 7168x12288", false, 7168, 12288, {1, 16, 256}},
  };
  if (quick) {
    for (auto& s : shapes) s.ns.resize(2);
  }

  std::printf("k3 kernel target: %s; ggml: CPU backend, %s\n", k3::kernels::kernel_target_name(),
              ggml_cpu_has_avx2() ? "AVX2" : "no AVX2");
  std::printf(
      "columns: median wall ms per call, median process CPU ms per call (all threads),\n"
      "weight bytes / median wall, 2*rows*cols*n / median wall, largest error over\n"
      "largest |y| against k3's scalar reference, highest 1-min load average seen\n\n");
  std::printf("%-30s %-11s %3s %3s %9s %8s %7s %8s %8s %5s\n", "matrix", "impl", "n", "thr", "median ms", "cpu ms",
              "GB/s", "GFLOP/s", "rel err", "load");
  // ggml logs every repacked tensor; keep its warnings and errors only.
  ggml_log_set(
      [](ggml_log_level level, const char* text, void*) {
        if (level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
      },
      nullptr);
  ggml_backend_t backend = ggml_backend_cpu_init();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (const Shape& s : shapes) {
    if (!only.empty() && std::string(s.name).find(only) == std::string::npos) continue;
    const size_t weight_bytes = s.mxfp4 ? s.rows * s.cols / 32 * 17 : s.rows * s.cols * 2;
    // Calls rotate over >= 384 MB of copies so weights come from memory.
    const size_t copies = std::max<size_t>(2, (size_t{384} << 20) / weight_bytes + 1);
    Weights w;
    make_weights(s, quick ? 2 : copies, rng, w);
    const size_t n_copies = w.tensors[0].size();
    if (s.mxfp4 && !same_mxfp4_weights(s, w)) {
      std::fprintf(stderr, "k3-bench-ggml: %s: ggml decodes the converted MXFP4 rows differently\n", s.name);
      return 1;
    }
    for (size_t n : s.ns) {
      std::vector<float> x(n * s.cols), ref(n * s.rows), y_ours(n * s.rows);
      for (auto& v : x) v = uni(rng);
      if (s.mxfp4) {
        k3::kernels::matmul_mxfp4_scalar(w.packed[0].data(), w.scales[0].data(), s.rows, s.cols, x.data(), n,
                                         ref.data());
      } else {
        k3::kernels::matmul_bf16_scalar(w.bf16[0].data(), s.rows, s.cols, x.data(), n, ref.data());
      }
      // ggml: one graph y = W_k x per buffer type and copy, all sharing x.
      const size_t n_graphs = w.bufts.size() * n_copies;
      ggml_init_params p = {
          ggml_tensor_overhead() * (n_graphs + 1) + ggml_graph_overhead_custom(16, false) * n_graphs + 4096, nullptr,
          true};
      ggml_context* ctx = ggml_init(p);
      ggml_tensor* gx = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, static_cast<int64_t>(s.cols), static_cast<int64_t>(n));
      std::vector<std::vector<ggml_cgraph*>> graphs(w.bufts.size());
      std::vector<std::vector<ggml_tensor*>> outs(w.bufts.size());
      for (size_t v = 0; v < w.bufts.size(); ++v) {
        for (size_t k = 0; k < n_copies; ++k) {
          outs[v].push_back(ggml_mul_mat(ctx, w.tensors[v][k], gx));
          graphs[v].push_back(ggml_new_graph_custom(ctx, 16, false));
          ggml_build_forward_expand(graphs[v].back(), outs[v].back());
        }
      }
      ggml_backend_buffer_t act = ggml_backend_alloc_ctx_tensors(ctx, backend);
      ggml_backend_tensor_set(gx, x.data(), 0, x.size() * sizeof(float));

      for (int threads : thread_counts) {
        k3::ThreadPool pool(threads);
        ggml_backend_cpu_set_n_threads(backend, threads);
        const size_t impls = 1 + w.bufts.size();
        std::vector<size_t> next(impls, 0);
        auto call = [&](size_t impl) {
          const size_t k = next[impl]++ % n_copies;
          if (impl == 0 && s.mxfp4) {
            k3::kernels::matmul_mxfp4(w.packed[k].data(), w.scales[k].data(), s.rows, s.cols, x.data(), n,
                                      y_ours.data(), &pool);
          } else if (impl == 0) {
            k3::kernels::matmul_bf16(w.bf16[k].data(), s.rows, s.cols, x.data(), n, y_ours.data(), &pool);
          } else {
            ggml_backend_graph_compute(backend, graphs[impl - 1][k]);
          }
        };
        std::vector<std::vector<double>> times(impls), cpu(impls);
        const double load0 = load_average();
        for (size_t i = 0; i < impls; ++i) call(i);  // warm-up (scratch, thread start)
        for (int r = 0; r < reps; ++r) {
          // Interleaved, and the order rotates so no side always runs first.
          for (size_t j = 0; j < impls; ++j) {
            const size_t i = (j + static_cast<size_t>(r)) % impls;
            const double c0 = process_cpu_seconds();
            const auto t0 = Clock::now();
            call(i);
            times[i].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
            cpu[i].push_back(process_cpu_seconds() - c0);
          }
        }
        const double load = std::max(load0, load_average());
        for (size_t i = 0; i < impls; ++i) {
          // Error of copy 0's output: recompute it once, untimed.
          next[i] = 0;
          call(i);
          std::vector<float> y(n * s.rows);
          if (i == 0) {
            y = y_ours;
          } else {
            ggml_backend_tensor_get(outs[i - 1][0], y.data(), 0, y.size() * sizeof(float));
          }
          const double t = median(times[i]);
          const std::string impl = i == 0 ? "k3" : std::string("ggml ") + (i == 1 ? "plain" : "repack");
          std::printf("%-30s %-11s %3zu %3d %9.3f %8.3f %7.2f %8.2f %8.1e %5.2f\n", s.name, impl.c_str(), n, threads,
                      t * 1e3, median(cpu[i]) * 1e3, static_cast<double>(weight_bytes) / t / 1e9,
                      2.0 * static_cast<double>(s.rows * s.cols * n) / t / 1e9,
                      relative_error(y.data(), ref.data(), y.size()), load);
        }
        std::fflush(stdout);
      }
      ggml_backend_buffer_free(act);
      ggml_free(ctx);
    }
  }
  ggml_backend_free(backend);
  return 0;
}
