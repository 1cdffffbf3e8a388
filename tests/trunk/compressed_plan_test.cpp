// The memory plan of a compressed trunk: bytes read per token are the
// stored (compressed) sizes of the streamed layers and lm_head blocks,
// beside the decoded ones; each stream buffer gets its decode staging; an
// uncompressed trunk's plan reads its decoded bytes and has no staging.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "model/config.h"
#include "model/tensor_manifest.h"
#include "planning/memory_plan.h"
#include "trunk/block_reader.h"
#include "trunk/writer.h"

namespace fs = std::filesystem;
using namespace k3;

TEST(CompressedPlan, ReadsStoredBytesAndPlansStaging) {
  const std::string tiny = std::string(K3_TEST_DATA) + "/k3-tiny";
  const fs::path dir = fs::temp_directory_path() / ("k3-compressed-plan-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const ModelConfig config = load_model_config(tiny);
  const Checkpoint c = Checkpoint::open(tiny);
  const auto manifest = expected_tensors(config);
  PackOptions o;
  o.compress = true;
  const TrunkLayout z = pack_trunk(c, manifest, (dir / "z").string(), o);
  const TrunkLayout raw = pack_trunk(c, manifest, (dir / "raw").string(), PackOptions{});
  RunRequest req;
  req.trunk_budget = 0;
  const uint64_t slot = expert_slot_bytes(config, manifest);
  const MemoryPlan pz = plan_memory(config, z, slot, req), pr = plan_memory(config, raw, slot, req);
  uint64_t want_read = 0, want_decoded = 0;
  for (const TrunkSection& s : z.sections) {
    if (s.layer >= 0) {
      want_read += s.stored_length;
      want_decoded += s.length;
    } else if (s.name == "head") {
      for (const TrunkTensor& t : s.tensors)
        if (t.name == config.lm_head_name) {
          want_decoded += t.nbytes;
          for (const TrunkBlock& b : s.blocks)
            if (b.offset >= t.offset && b.offset < t.offset + t.nbytes) want_read += b.stored_size;
        }
    }
  }
  EXPECT_TRUE(pz.head_streamed);
  EXPECT_EQ(pz.streamed_read_bytes, want_read);
  EXPECT_EQ(pz.streamed_decoded_bytes, want_decoded);
  EXPECT_LT(pz.streamed_read_bytes, pz.streamed_decoded_bytes * 0.8);
  uint64_t largest_stored = 0;
  for (const TrunkSection& s : z.sections)
    if (s.name != "embedding") largest_stored = std::max(largest_stored, s.stored_length);
  // Pieces are no larger than the unit a stream buffer holds (a head block here).
  const uint64_t piece = TrunkBlockReader::piece_bytes_for(std::min(largest_stored, pz.stream_buffer_size));
  EXPECT_EQ(pz.stream_staging_bytes, pz.stream_buffers * TrunkBlockReader::staging_bytes(piece));
  EXPECT_GT(pz.stream_staging_bytes, 0u);
  EXPECT_EQ(pz.peak_rss - pr.peak_rss, pz.stream_staging_bytes + (pz.stream_buffer_bytes - pr.stream_buffer_bytes));
  EXPECT_EQ(pr.streamed_read_bytes, pr.streamed_decoded_bytes);
  EXPECT_EQ(pr.streamed_decoded_bytes, want_decoded);
  EXPECT_EQ(pr.stream_staging_bytes, 0u);
  fs::remove_all(dir);
}
