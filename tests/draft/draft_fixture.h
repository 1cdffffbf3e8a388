// The tiny DSpark draft (tests/data/k3-tiny-dspark) and its goldens, for the
// draft tests; the target is the tiny K3 of tests/model/model_fixture.h.
#pragma once

#include <simdjson.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "common/file.h"
#include "model/forward_pass.h"
#include "model/model_fixture.h"

namespace k3::test {

inline std::string draft_dir() { return std::string(K3_TEST_DATA) + "/k3-tiny-dspark"; }

struct DraftCase {
  std::string name;
  int64_t anchor_pos = 0;
  int32_t anchor_id = 0;
  size_t n_rows = 0;
  std::vector<int32_t> draft_ids;
  std::vector<double> confidence_logit;
};

struct DraftGolden {
  std::vector<int32_t> sequence_ids;
  std::vector<int> target_layer_ids;
  std::vector<DraftCase> cases;
  std::map<std::string, std::vector<float>> tensors;  // golden_outputs + "taps"

  static const DraftGolden& get() {
    static DraftGolden* g = [] {
      auto* out = new DraftGolden;
      simdjson::dom::parser parser;
      simdjson::dom::element root = parser.load(draft_dir() + "/golden.json");
      for (auto x : root["inputs"]["sequence_ids"].get_array()) out->sequence_ids.push_back(int32_t(int64_t(x)));
      for (auto x : root["inputs"]["target_layer_ids"].get_array()) out->target_layer_ids.push_back(int(int64_t(x)));
      for (auto c : root["cases"].get_array()) {
        DraftCase d;
        d.name = std::string(std::string_view(c["name"]));
        d.anchor_pos = int64_t(c["anchor_pos"]);
        d.anchor_id = int32_t(int64_t(c["anchor_id"]));
        d.n_rows = size_t(int64_t(c["n_rows"]));
        for (auto x : c["draft_ids"].get_array()) d.draft_ids.push_back(int32_t(int64_t(x)));
        for (auto x : c["confidence_logit"].get_array()) d.confidence_logit.push_back(double(x));
        out->cases.push_back(d);
      }
      for (const char* file : {"golden_outputs.safetensors", "golden_taps.safetensors"}) {
        const std::string path = draft_dir() + "/" + file;
        SafetensorsHeader h = read_safetensors_header(path);
        File f = File::open_read(path);
        for (const auto& [name, t] : h.tensors) {
          std::vector<float>& dst = out->tensors[name];
          dst.resize(t.numel());
          f.pread_exact(dst.data(), t.nbytes, t.offset);
        }
      }
      return out;
    }();
    return *g;
  }
  const std::vector<float>& at(const std::string& name) const { return tensors.at(name); }
};

// Collects the taps of the target's forward passes: [position][slot][hidden].
struct TapRecorder : LayerTap {
  std::vector<int> layers;
  size_t hidden = 0;
  std::vector<float> taps;
  bool wants(int layer) const override {
    for (int l : layers)
      if (l == layer) return true;
    return false;
  }
  void on_layer(int layer, const SequenceState&, int64_t pos0, const float* rows, size_t n) override {
    const size_t k = layers.size();
    taps.resize(std::max(taps.size(), (static_cast<size_t>(pos0) + n) * k * hidden));
    for (size_t slot = 0; slot < k; ++slot)
      if (layers[slot] == layer)
        for (size_t t = 0; t < n; ++t)
          std::copy_n(rows + t * hidden, hidden, taps.data() + ((pos0 + t) * k + slot) * hidden);
  }
};

// max |a - b| / max |b|.
inline double rel_err(const float* a, const float* b, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; ++i) {
    d = std::max(d, std::abs(double(a[i]) - b[i]));
    m = std::max(m, std::abs(double(b[i])));
  }
  return m > 0 ? d / m : d;
}

inline double min_row_cosine(const float* a, const float* b, size_t rows, size_t dim) {
  double worst = 1;
  for (size_t r = 0; r < rows; ++r) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t j = 0; j < dim; ++j) {
      ab += double(a[r * dim + j]) * b[r * dim + j];
      aa += double(a[r * dim + j]) * a[r * dim + j];
      bb += double(b[r * dim + j]) * b[r * dim + j];
    }
    worst = std::min(worst, ab / std::sqrt(aa * bb));
  }
  return worst;
}

}  // namespace k3::test
