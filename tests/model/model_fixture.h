// Shared helpers for the model tests: the tiny checkpoint, its goldens.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/safetensors.h"
#include "common/file.h"
#include "model/config.h"
#include "runtime/resident_weights.h"

namespace k3::test {

inline std::string tiny_dir() { return std::string(K3_TEST_DATA) + "/k3-tiny"; }

// The tiny model loaded once per test binary.
struct TinyModel {
  ModelConfig config;
  std::unique_ptr<Checkpoint> checkpoint;
  std::unique_ptr<ResidentWeights> weights;

  static TinyModel& get() {
    static TinyModel* m = [] {
      auto* t = new TinyModel;
      t->config = load_model_config(tiny_dir());
      t->checkpoint = std::make_unique<Checkpoint>(Checkpoint::open(tiny_dir()));
      t->weights = std::make_unique<ResidentWeights>(t->config, *t->checkpoint, nullptr);
      return t;
    }();
    return *m;
  }
};

struct Golden {
  std::vector<int32_t> tf_ids, tf_argmax;
  std::vector<int32_t> greedy_prompt, greedy_ids;
  std::vector<float> tf_logits;      // [32, vocab]
  std::vector<float> greedy_logits;  // [20, vocab]

  static const Golden& get() {
    static Golden* g = [] {
      auto* out = new Golden;
      simdjson::dom::parser parser;
      simdjson::dom::element root = parser.load(tiny_dir() + "/golden.json");
      auto ints = [](simdjson::dom::element e) {
        std::vector<int32_t> v;
        for (auto x : e.get_array()) v.push_back(static_cast<int32_t>(int64_t(x)));
        return v;
      };
      simdjson::dom::element tf = root["teacher_forcing"], gr = root["greedy"];
      out->tf_ids = ints(tf["ids"]);
      out->tf_argmax = ints(tf["argmax"]);
      out->greedy_prompt = ints(gr["prompt_ids"]);
      out->greedy_ids = ints(gr["ids"]);
      const std::string path = tiny_dir() + "/golden_logits.safetensors";
      SafetensorsHeader h = read_safetensors_header(path);
      File f = File::open_read(path);
      auto load = [&](const std::string& name, std::vector<float>* dst) {
        const TensorInfo& t = h.tensors.at(name);
        dst->resize(t.numel());
        f.pread_exact(dst->data(), t.nbytes, t.offset);
      };
      load("teacher_forcing.logits", &out->tf_logits);
      load("greedy.logits", &out->greedy_logits);
      return out;
    }();
    return *g;
  }
};

inline float max_abs(const float* x, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::abs(x[i]));
  return m;
}

inline float max_abs_diff(const float* a, const float* b, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

inline int32_t argmax_row(const float* x, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return static_cast<int32_t>(best);
}

}  // namespace k3::test
