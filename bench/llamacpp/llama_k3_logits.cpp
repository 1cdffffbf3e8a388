// The next-token logits of one prompt of token ids, from llama.cpp (libllama),
// for comparing against k3-forward --logits on the same weights. Built by
// bench/llamacpp/e2e.sh against the llama.cpp tree it fetched; not part of k3.
//
//   llama-k3-logits MODEL.gguf IDS_FILE OUT.f32 [THREADS]
//
// IDS_FILE holds whitespace-separated decimal ids; the prompt runs as one batch
// and every position's logits go to OUT.f32 (raw little-endian float32,
// positions x vocabulary, as k3-forward --logits writes them); the last
// position's five most likely ids are printed.
#include "llama.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <vector>

static int fail(const char* what) {
  std::fprintf(stderr, "llama-k3-logits: %s\n", what);
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf IDS_FILE OUT.f32 [THREADS]\n", argv[0]);
    return 2;
  }
  const int threads = argc > 4 ? std::atoi(argv[4]) : 1;
  std::vector<llama_token> ids;
  {
    std::ifstream in(argv[2]);
    long id;
    while (in >> id) ids.push_back(static_cast<llama_token>(id));
    if (!in.eof()) return fail("IDS_FILE: not whitespace-separated decimal ids");
  }
  if (ids.empty()) return fail("IDS_FILE: no ids");

  llama_backend_init();
  const llama_model_params mp = llama_model_default_params();  // as llama-bench loads it
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return fail("could not load the model");
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  for (llama_token id : ids)
    if (id < 0 || id >= n_vocab) return fail("IDS_FILE: an id is outside the vocabulary");

  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(ids.size() + 16);
  cp.n_batch = cp.n_ctx;
  cp.n_ubatch = cp.n_ctx;
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) return fail("could not create a context");
  // One batch asking for every position's logits (llama_batch_get_one asks for the last only).
  const int n = static_cast<int>(ids.size());
  llama_batch batch = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    batch.token[i] = ids[i];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = n;
  if (llama_decode(ctx, batch) != 0) return fail("llama_decode failed");

  std::FILE* out = std::fopen(argv[3], "wb");
  if (out == nullptr) return fail("could not create OUT.f32");
  const float* logits = nullptr;
  for (int i = 0; i < n; ++i) {
    logits = llama_get_logits_ith(ctx, i);
    if (logits == nullptr) return fail("no logits for a position");
    if (std::fwrite(logits, sizeof(float), n_vocab, out) != static_cast<size_t>(n_vocab))
      return fail("could not write OUT.f32");
  }
  if (std::fclose(out) != 0) return fail("could not write OUT.f32");
  llama_batch_free(batch);

  std::vector<int> order(n_vocab);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                    [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (int i = 0; i < 5; ++i) std::printf("%d %.6f\n", order[i], logits[order[i]]);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
