// read_state_summary: the model, geometry and ids a state file holds, read
// from its leading sections only (k3-serve's prompt cache indexes its
// directory with it), and the refusals of what is not a whole state file of
// this format. States of a made-up geometry, written by write_state_file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "lib/test_util.h"
#include "state/state_file.h"
#include "state/state_file_summary.h"
#include "state/state_geometry.h"
#include "state/state_layout.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {

StateGeometry geometry() {
  StateGeometry g;
  g.vocab_size = 50;
  g.kda_heads = 2;
  g.kda_head_dim = 4;
  g.conv_kernel = 4;
  g.kv_lora_rank = 6;
  g.qk_rope_head_dim = 2;
  g.layer_is_mla = {0, 1, 0, 1, 0};  // 5 layers: the geometry section's payload is 37 bytes, padded to 40
  return g;
}

ConversationState state(int64_t positions, std::vector<int32_t> pending) {
  ConversationState s;
  s.model = {0x0123456789abcdefull, 0x1111111111111111ull, 0xfedcba9876543210ull};
  s.geometry = geometry();
  s.sequence.positions = positions;
  for (int64_t i = 0; i < positions; ++i) s.sequence.tokens.push_back(static_cast<int32_t>((i * 11 + 5) % 50));
  s.sequence.layers.resize(s.geometry.num_layers());
  for (uint32_t i = 0; i < s.geometry.num_layers(); ++i)
    if (s.geometry.layer_is_mla[i])
      s.sequence.layers[i].mla.latent.assign(positions * s.geometry.mla_floats_per_position(), 0.5f + i);
  s.pending = std::move(pending);
  return s;
}

// Where the token section's id count and first id are: header 32, MODL 16+24, GEOM 16+40, TOKN's header 16.
constexpr uint64_t kTokenCount = 32 + 40 + 56 + 16;
constexpr uint64_t kFirstId = kTokenCount + 8;

template <typename T>
void put(const fs::path& p, uint64_t at, T v) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(reinterpret_cast<const char*>(&v), sizeof v);
}

class StateFileSummaryTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::fresh_dir("state-summary"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const ConversationState& s) {
    const std::string p = (dir_ / "s.k3state").string();
    write_state_file(p, s);
    return p;
  }
  ExitCode refused(const std::string& p, std::string* msg) {
    return test::code_of([&] { read_state_summary(p); }, msg);
  }
  fs::path dir_;
};

TEST_F(StateFileSummaryTest, ModelGeometryAndIdsOfTheFile) {
  const ConversationState s = state(7, {42});
  const std::string p = write(s);
  const StateFileSummary got = read_state_summary(p);
  EXPECT_EQ(got.model, s.model);
  EXPECT_EQ(got.geometry, s.geometry);
  std::vector<int32_t> ids = s.sequence.tokens;
  ids.push_back(42);
  EXPECT_EQ(got.ids, ids);  // evaluated, then pending
  EXPECT_EQ(got.file_bytes, fs::file_size(p));
  EXPECT_EQ(got.file_bytes, state_file_bytes(s.geometry, {7, 1, false, false, false}));
  EXPECT_EQ(read_state_summary(write(state(3, {}))).ids.size(), 3u);
}

TEST_F(StateFileSummaryTest, ReadsNoStateAndSoNoChecksum) {
  // A damaged layer section is not seen by the summary (it is a hint), but
  // the whole read refuses it: the prompt cache continues only from that.
  const ConversationState s = state(7, {42});
  const std::string p = write(s);
  test::flip_byte(p, fs::file_size(p) - 20);
  EXPECT_EQ(read_state_summary(p).ids.size(), 8u);
  EXPECT_EQ(test::code_of([&] { read_state_file(p, s.model, s.geometry); }), ExitCode::kBadInput);
}

TEST_F(StateFileSummaryTest, RefusesWhatIsNotAWholeStateFile) {
  std::string msg;
  const std::string p = write(state(7, {42}));
  fs::resize_file(p, fs::file_size(p) - 1);
  EXPECT_EQ(refused(p, &msg), ExitCode::kBadInput);
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;

  std::ofstream((dir_ / "text.k3state").string()) << "{\"not\": \"a state\"}\n" << std::string(64, 'x');
  EXPECT_EQ(refused((dir_ / "text.k3state").string(), &msg), ExitCode::kBadInput);
  EXPECT_NE(msg.find("not a k3 state file"), std::string::npos) << msg;
  std::ofstream((dir_ / "empty.k3state").string());
  EXPECT_EQ(refused((dir_ / "empty.k3state").string(), &msg), ExitCode::kBadInput);
  EXPECT_EQ(refused((dir_ / "missing.k3state").string(), &msg), ExitCode::kBadInput);
}

TEST_F(StateFileSummaryTest, RefusesForgedSections) {
  std::string msg;
  // An id count that runs past the file (a forged length allocates nothing).
  std::string p = write(state(7, {42}));
  put<uint64_t>(p, kTokenCount, uint64_t{1} << 60);
  EXPECT_EQ(refused(p, &msg), ExitCode::kBadInput);
  EXPECT_NE(msg.find("malformed"), std::string::npos) << msg;
  // An id outside the vocabulary.
  p = write(state(7, {42}));
  put<int32_t>(p, kFirstId, 50);
  EXPECT_EQ(refused(p, &msg), ExitCode::kBadInput);
  EXPECT_NE(msg.find("outside the vocabulary"), std::string::npos) << msg;
  // Another format version.
  p = write(state(7, {42}));
  put<uint32_t>(p, 8, state_layout::kFormatVersion + 1);
  EXPECT_EQ(refused(p, &msg), ExitCode::kBadInput);
  // A section tag out of order (the geometry's where the model's belongs).
  p = write(state(7, {42}));
  put<uint32_t>(p, 32, state_layout::kTagGeometry);
  EXPECT_EQ(refused(p, &msg), ExitCode::kBadInput);
}

}  // namespace
