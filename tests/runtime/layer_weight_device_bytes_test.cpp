// runtime/device_plan's figure for a layer's weights kept on the device
// across a chunk's sub-batches (layer_weight_device_bytes), over a
// checkpoint written here: the products' matrices in row slices of the
// stage, MLA's kv_b whole (its attention reads it in one binding), each a
// buffer of at least 16 bytes with 4 past its end; not the AttnRes keys
// nor the routed experts; the largest layer's sum.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "lib/test_util.h"
#include "runtime/device_plan.h"

namespace k3 {
namespace {

struct Tensor {
  std::string name;
  uint64_t rows, cols;  // BF16
};

// A model.safetensors of zero BF16 matrices.
std::string write_checkpoint(const std::vector<Tensor>& tensors) {
  const std::filesystem::path dir = test::fresh_dir("layer-weight-bytes");
  std::string header = "{";
  uint64_t at = 0;
  for (const Tensor& t : tensors) {
    const uint64_t bytes = t.rows * t.cols * 2;
    if (header.size() > 1) header += ",";
    header += "\"" + t.name + "\":{\"dtype\":\"BF16\",\"shape\":[" + std::to_string(t.rows) + "," +
              std::to_string(t.cols) + "],\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + bytes) +
              "]}";
    at += bytes;
  }
  header += "}";
  while (header.size() % 8 != 0) header += " ";
  std::ofstream f(dir / "model.safetensors", std::ios::binary);
  const uint64_t size = header.size();
  f.write(reinterpret_cast<const char*>(&size), 8);
  f << header;
  f << std::string(at, '\0');
  return dir.string();
}

TEST(LayerWeightDeviceBytes, ProductsInSlicesKvBWholeTheLargestLayer) {
  const std::string dir = write_checkpoint({
      {"model.layers.0.self_attn.kv_b_proj.weight", 64, 32},     // 4,096 bytes: one buffer of 4,100
      {"model.layers.0.self_attn.q_proj.weight", 8, 16},         // 8 rows of 32 bytes
      {"model.layers.0.attn_res_proj.weight", 1, 16},            // an AttnRes key: not kept
      {"model.layers.1.mlp.gate_proj.weight", 4, 16},            // 128 bytes
      {"model.layers.1.mlp.experts.0.gate_proj.weight", 64, 64}  // a routed expert: not kept
  });
  const Checkpoint checkpoint = Checkpoint::open(dir);
  // A stage of 1 MiB: q_proj in one slice (256 + 4), kv_b whole; layer 1's
  // 128 + 4 is smaller.
  EXPECT_EQ(layer_weight_device_bytes(checkpoint, 1 << 20), 4100u + 260u);
  // A stage of 64 bytes: q_proj in four slices of two rows (64 + 4 each);
  // kv_b still whole.
  EXPECT_EQ(layer_weight_device_bytes(checkpoint, 64), 4100u + 4 * 68u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace k3
