// State files: exact round trip, the documented size, and every refusal path
// (each with its exit code and a message naming the file), on synthetic states
// of a made-up geometry (nothing here assumes a particular model).
#include <gtest/gtest.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "common/atomic_file_writer.h"
#include "common/error.h"
#include "lib/test_util.h"
#include "state/state_file.h"
#include "state/state_geometry.h"
#include "state/state_layout.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {

StateGeometry small_geometry() {
  StateGeometry g;
  g.vocab_size = 50;
  g.kda_heads = 3;
  g.kda_head_dim = 4;
  g.conv_kernel = 4;
  g.kv_lora_rank = 6;
  g.qk_rope_head_dim = 2;
  g.layer_is_mla = {0, 0, 1, 0, 1};
  return g;
}

ModelFingerprint small_model() { return {0x1111222233334444ull, 0x5555666677778888ull, 0x99990000aaaabbbbull}; }

// Deterministic, distinct values (including a negative zero and a denormal) so
// that any misplaced float shows.
std::vector<float> fill(size_t n, float base) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + 0.001f * static_cast<float>(i) - 0.37f * static_cast<float>(i % 7);
  if (n > 2) {
    v[0] = -0.0f;
    v[1] = 1e-40f;
  }
  return v;
}

ConversationState make_state(int64_t positions, bool sampling = true, bool logits = true) {
  ConversationState s;
  s.model = small_model();
  s.geometry = small_geometry();
  const StateGeometry& g = s.geometry;
  s.sequence.positions = positions;
  for (int64_t i = 0; i < positions; ++i) s.sequence.tokens.push_back(static_cast<int32_t>((i * 7 + 3) % 50));
  s.sequence.layers.resize(g.num_layers());
  for (uint32_t i = 0; i < g.num_layers(); ++i) {
    LayerState& l = s.sequence.layers[i];
    if (g.layer_is_mla[i]) {
      l.mla.latent = fill(positions * g.mla_floats_per_position(), 10.0f * i);
    } else {
      l.kda.S = fill(g.kda_state_floats(), 1.0f + i);
      l.kda.conv_q = fill(g.kda_conv_floats(), 2.0f + i);
      l.kda.conv_k = fill(g.kda_conv_floats(), 3.0f + i);
      l.kda.conv_v = fill(g.kda_conv_floats(), 4.0f + i);
    }
  }
  s.pending = {49};
  if (sampling) {
    SamplingParams p;
    p.temperature = 0.7;
    p.top_k = 40;
    p.top_p = 0.9;
    p.min_p = 0.05;
    p.seed = 0xfedcba9876543210ull;
    s.sampling = p;
  }
  if (logits) s.last_logits = fill(g.vocab_size, -3.0f);
  return s;
}

class StateFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("k3-state-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void spit(const std::string& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), bytes.size());
  }
  // Recomputes the trailing checksum after a deliberate edit, so that the
  // check under test (not the checksum) is what refuses the file.
  static void reseal(std::string& bytes) {
    uint64_t h = XXH3_64bits(bytes.data(), bytes.size() - 8);
    std::memcpy(&bytes[bytes.size() - 8], &h, 8);
  }

  // Runs the reader, returns the message and sets *code.
  std::string refusal(const std::string& p, ExitCode* code, const ModelFingerprint& m = small_model(),
                      const StateGeometry& g = small_geometry()) {
    try {
      read_state_file(p, m, g);
    } catch (const Error& e) {
      *code = e.code();
      return e.what();
    }
    *code = ExitCode::kOk;
    return "";
  }

  fs::path dir_;
};

}  // namespace

TEST_F(StateFileTest, RoundTripIsExact) {
  for (int64_t positions : {0, 1, 9}) {
    for (bool extras : {false, true}) {
      ConversationState s = make_state(positions, extras, extras);
      std::string p = path("s.k3state");
      write_state_file(p, s);
      ConversationState r = read_state_file(p, small_model(), small_geometry());
      EXPECT_EQ(r.model, s.model);
      EXPECT_EQ(r.geometry, s.geometry);
      EXPECT_EQ(r.sequence.positions, positions);
      EXPECT_EQ(r.sequence.tokens, s.sequence.tokens);
      EXPECT_EQ(r.pending, s.pending);
      ASSERT_EQ(r.sampling.has_value(), extras);
      if (extras) {
        EXPECT_EQ(r.sampling->temperature, 0.7);
        EXPECT_EQ(r.sampling->top_k, 40);
        EXPECT_EQ(r.sampling->top_p, 0.9);
        EXPECT_EQ(r.sampling->min_p, 0.05);
        EXPECT_EQ(r.sampling->seed, 0xfedcba9876543210ull);
      }
      EXPECT_TRUE(test::same_bits(r.last_logits, s.last_logits));
      ASSERT_EQ(r.sequence.layers.size(), 5u);
      for (size_t i = 0; i < 5; ++i) {
        const LayerState &a = s.sequence.layers[i], &b = r.sequence.layers[i];
        EXPECT_TRUE(test::same_bits(a.kda.S, b.kda.S)) << i;
        EXPECT_TRUE(test::same_bits(a.kda.conv_q, b.kda.conv_q)) << i;
        EXPECT_TRUE(test::same_bits(a.kda.conv_k, b.kda.conv_k)) << i;
        EXPECT_TRUE(test::same_bits(a.kda.conv_v, b.kda.conv_v)) << i;
        EXPECT_TRUE(test::same_bits(a.mla.latent, b.mla.latent)) << i;
      }
      StateFileContents c{static_cast<uint64_t>(positions), 1, extras, extras};
      EXPECT_EQ(fs::file_size(p), state_file_bytes(small_geometry(), c));
    }
  }
}

TEST_F(StateFileTest, EmptyKdaVectorsAreWrittenAsZeroState) {
  ConversationState s = make_state(0, false, false);
  s.sequence.layers[0].kda = KdaState{};  // a layer that never ran
  std::string p = path("z.k3state");
  write_state_file(p, s);
  ConversationState r = read_state_file(p, small_model(), small_geometry());
  EXPECT_EQ(r.sequence.layers[0].kda.S, std::vector<float>(small_geometry().kda_state_floats(), 0.0f));
  EXPECT_EQ(r.sequence.layers[0].kda.conv_v, std::vector<float>(small_geometry().kda_conv_floats(), 0.0f));
}

TEST_F(StateFileTest, LayoutMatchesTheDocumentedArithmetic) {
  // Geometry above, 9 positions, 1 pending id, sampler and logits present.
  const uint64_t header = 32, section = 16, checksum = 8;
  const uint64_t model = section + 24;
  const uint64_t geom = section + 40;     // 32 + 5 layer bytes = 37 -> 40
  const uint64_t tokens = section + 48;   // 8 + 9*4 = 44 -> 48
  const uint64_t pending = section + 16;  // 8 + 4 = 12 -> 16
  const uint64_t sampler = section + 40;
  const uint64_t logits = section + 200;                                 // 50 floats
  const uint64_t kda = section + 8 + 4 * (3 * 4 * 4 + 3 * (3 * 3 * 4));  // S + 3 carries of (K-1)*H*D
  const uint64_t mla = section + 16 + 4 * 9 * (6 + 2);
  const uint64_t want = header + model + geom + tokens + pending + sampler + logits + 3 * kda + 2 * mla + checksum;
  EXPECT_EQ(state_file_bytes(small_geometry(), {9, 1, true, true}), want);
  std::string p = path("a.k3state");
  write_state_file(p, make_state(9));
  EXPECT_EQ(fs::file_size(p), want);
}

// The real Kimi-K3 geometry (SPEC section 1): 93 layers, 69 KDA with 96 heads
// of 128 and conv kernel 4, 24 MLA with a 512+64 latent, vocab 163840.
TEST(StateSize, RealK3Geometry) {
  StateGeometry g;
  g.vocab_size = 163840;
  g.kda_heads = 96;
  g.kda_head_dim = 128;
  g.conv_kernel = 4;
  g.kv_lora_rank = 512;
  g.qk_rope_head_dim = 64;
  g.layer_is_mla.assign(93, 0);
  for (int i = 3; i < 93; i += 4) g.layer_is_mla[i] = 1;  // where they sit does not change the size
  g.layer_is_mla[92] = 1;
  ASSERT_EQ(g.num_kda_layers(), 69u);
  ASSERT_EQ(g.num_mla_layers(), 24u);

  const uint64_t kda_state = 69ull * 96 * 128 * 128 * 4;  // 434,110,464
  const uint64_t conv = 69ull * 3 * 3 * 96 * 128 * 4;     // 30,523,392: q,k,v x 3 previous inputs
  const uint64_t per_position = 24ull * 576 * 4 + 4;      // latent + token id = 55,300
  EXPECT_EQ(kda_state, 434110464ull);
  EXPECT_EQ(conv, 30523392ull);

  // After a generation: one pending id and the sampler settings, no logits.
  auto size = [&](uint64_t positions) { return state_file_bytes(g, {positions, 1, true, false}); };
  const uint64_t fixed = size(0);
  EXPECT_GT(fixed, kda_state + conv);
  EXPECT_LT(fixed, kda_state + conv + 4096);  // headers and small sections only
  for (uint64_t p : {1ull, 4096ull, 32768ull, 131072ull, 1048576ull}) {
    uint64_t grow = size(p) - fixed;
    EXPECT_GE(grow, per_position * p) << p;
    EXPECT_LE(grow, per_position * p + 4) << p;  // token section padding
  }
  // The README table ("Conversations and sampling"), summed by hand from the
  // layout: 32 header + 40 MODL + 144 GEOM + (16 + pad8(8 + 4P)) TOKN + 32 PEND
  // + 56 SAMP + 69 x (24 + 4 x (96*128*128 + 3*3*96*128)) + 24 x (32 + 2304 P) + 8.
  EXPECT_EQ(size(0), 464636616ull);
  EXPECT_EQ(size(4096), 691145416ull);
  EXPECT_EQ(size(32768), 2276707016ull);
  EXPECT_EQ(size(131072), 7712918216ull);
  EXPECT_EQ(size(1048576), 58450889416ull);
  // The logits section adds exactly vocab floats and a section header.
  EXPECT_EQ(state_file_bytes(g, {4096, 1, true, true}) - size(4096), 163840ull * 4 + 16);
}

TEST_F(StateFileTest, RefusesMissingFile) {
  ExitCode code;
  std::string msg = refusal(path("nope.k3state"), &code);
  EXPECT_EQ(code, ExitCode::kBadInput);
  EXPECT_NE(msg.find("nope.k3state"), std::string::npos);
  EXPECT_NE(msg.find("not found"), std::string::npos);
}

TEST_F(StateFileTest, RefusesWrongMagic) {
  std::string p = path("m.k3state");
  write_state_file(p, make_state(3));
  std::string b = slurp(p);
  b[0] = 'X';
  reseal(b);
  spit(p, b);
  ExitCode code;
  std::string msg = refusal(p, &code);
  EXPECT_EQ(code, ExitCode::kBadInput);
  EXPECT_EQ(msg.rfind(p + ": not a k3 state file", 0), 0u) << msg;
  // Something that is not a state file at all, and an empty file.
  spit(p, "{\"hello\": 1}\n");
  EXPECT_NE(refusal(p, &code).find("not a k3 state file"), std::string::npos);
  EXPECT_EQ(code, ExitCode::kBadInput);
  spit(p, "");
  EXPECT_NE(refusal(p, &code).find("not a k3 state file"), std::string::npos);
  EXPECT_EQ(code, ExitCode::kBadInput);
}

TEST_F(StateFileTest, RefusesOtherVersionAndUnknownFlags) {
  std::string p = path("v.k3state");
  write_state_file(p, make_state(3));
  std::string good = slurp(p);
  std::string b = good;
  uint32_t v = 2;
  std::memcpy(&b[8], &v, 4);
  reseal(b);
  spit(p, b);
  ExitCode code;
  std::string msg = refusal(p, &code);
  EXPECT_EQ(code, ExitCode::kBadInput);
  EXPECT_NE(msg.find("version 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reads version 1"), std::string::npos) << msg;

  b = good;
  uint32_t flags = 1u << 7;
  std::memcpy(&b[12], &flags, 4);
  reseal(b);
  spit(p, b);
  msg = refusal(p, &code);
  EXPECT_EQ(code, ExitCode::kBadInput);
  EXPECT_NE(msg.find("unknown flags"), std::string::npos) << msg;
}

TEST_F(StateFileTest, RefusesTruncatedAndExtendedFiles) {
  std::string p = path("t.k3state");
  write_state_file(p, make_state(5));
  std::string good = slurp(p);
  ExitCode code;
  for (size_t keep : {good.size() - 1, good.size() - 8, good.size() / 2, size_t{40}, size_t{20}, size_t{9}}) {
    spit(p, good.substr(0, keep));
    std::string msg = refusal(p, &code);
    EXPECT_EQ(code, ExitCode::kBadInput) << keep;
    EXPECT_EQ(msg.rfind(p + ": truncated state file", 0), 0u) << keep << ": " << msg;
  }
  spit(p, good + "junk");
  std::string msg = refusal(p, &code);
  EXPECT_EQ(code, ExitCode::kBadInput);
  EXPECT_NE(msg.find("header says"), std::string::npos) << msg;
}

TEST_F(StateFileTest, RefusesChecksumMismatchAnywhere) {
  std::string p = path("c.k3state");
  write_state_file(p, make_state(5));
  std::string good = slurp(p);
  // A flipped bit in a float of the KDA state, in the token history, in the
  // model fingerprint, and in the checksum itself.
  for (size_t at : {good.size() / 2, size_t{32 + 40 + 56 + 20}, size_t{32 + 16 + 3}, good.size() - 3}) {
    std::string b = good;
    b[at] ^= 0x10;
    spit(p, b);
    ExitCode code;
    std::string msg = refusal(p, &code);
    EXPECT_EQ(code, ExitCode::kBadInput) << at;
    EXPECT_EQ(msg.rfind(p + ": checksum mismatch", 0), 0u) << at << ": " << msg;
  }
}

TEST_F(StateFileTest, RefusesMalformedSectionsEvenWithAValidChecksum) {
  std::string p = path("f.k3state");
  write_state_file(p, make_state(5));
  std::string good = slurp(p);
  ExitCode code;
  // The geometry section's tag replaced.
  std::string b = good;
  std::memcpy(&b[32 + 40], "ZZZZ", 4);
  reseal(b);
  spit(p, b);
  std::string msg = refusal(p, &code);
  EXPECT_EQ(code, ExitCode::kBadInput);
  EXPECT_NE(msg.find("malformed state file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ZZZZ"), std::string::npos) << msg;
  // A token id outside the vocabulary.
  b = good;
  int32_t bad_id = 50;
  std::memcpy(&b[32 + 40 + 56 + 16 + 8], &bad_id, 4);
  reseal(b);
  spit(p, b);
  msg = refusal(p, &code);
  EXPECT_EQ(code, ExitCode::kBadInput);
  EXPECT_NE(msg.find("outside the vocabulary"), std::string::npos) << msg;
  // A section length that runs past the end.
  b = good;
  uint64_t huge = 1ull << 60;
  std::memcpy(&b[32 + 8], &huge, 8);
  reseal(b);
  spit(p, b);
  msg = refusal(p, &code);
  EXPECT_EQ(code, ExitCode::kBadInput);
  EXPECT_NE(msg.find("runs past the end"), std::string::npos) << msg;
}

TEST_F(StateFileTest, RefusesAnotherGeometryWithExit3) {
  std::string p = path("g.k3state");
  write_state_file(p, make_state(2));
  ExitCode code;
  StateGeometry other = small_geometry();
  other.kda_heads = 4;
  std::string msg = refusal(p, &code, small_model(), other);
  EXPECT_EQ(code, ExitCode::kBadModel);
  EXPECT_EQ(msg.rfind(p + ": this state was saved for a model of another shape", 0), 0u) << msg;
  EXPECT_NE(msg.find("3 heads"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 heads"), std::string::npos) << msg;
  other = small_geometry();
  other.layer_is_mla = {0, 1, 0, 0, 1};  // same counts, another layer order
  refusal(p, &code, small_model(), other);
  EXPECT_EQ(code, ExitCode::kBadModel);
}

TEST_F(StateFileTest, RefusesAnotherModelWithExit3) {
  std::string p = path("fp.k3state");
  write_state_file(p, make_state(2));
  for (int which = 0; which < 3; ++which) {
    ModelFingerprint other = small_model();
    (which == 0 ? other.config_hash : which == 1 ? other.index_hash : other.weights_hash) ^= 1;
    ExitCode code;
    std::string msg = refusal(p, &code, other);
    EXPECT_EQ(code, ExitCode::kBadModel) << which;
    EXPECT_EQ(msg.rfind(p + ": this state was saved for a different model", 0), 0u) << msg;
  }
}

TEST_F(StateFileTest, FailedWritesLeaveThePreviousFile) {
  std::string p = path("keep.k3state");
  write_state_file(p, make_state(4));
  const std::string before = slurp(p);

  // An inconsistent state is refused before anything is written.
  ConversationState bad = make_state(6);
  bad.sequence.layers[2].mla.latent.pop_back();
  try {
    write_state_file(p, bad);
    FAIL() << "inconsistent state written";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kInternal);
  }
  EXPECT_EQ(slurp(p), before);

  // A writer abandoned half way (an exception, a signal) leaves the old file
  // and no temporary behind.
  {
    AtomicFileWriter w(p);
    w.write("partial", 7);
  }
  EXPECT_EQ(slurp(p), before);
  size_t files = 0;
  for (auto& e : fs::directory_iterator(dir_)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u);

  // A directory that does not exist: kIo naming the path, nothing created.
  std::string missing = path("no/such/dir/s.k3state");
  try {
    write_state_file(missing, make_state(1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kIo);
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos);
  }

  // A successful rewrite replaces the file completely.
  write_state_file(p, make_state(1));
  EXPECT_NE(slurp(p), before);
  EXPECT_EQ(read_state_file(p, small_model(), small_geometry()).sequence.positions, 1);
}

// A forged file with many pending ids (a continuation would spend minutes
// evaluating 100k of them before any other check) is refused when read: a
// run saves at most the one id it generated last.
TEST_F(StateFileTest, MorePendingIdsThanARunSavesAreRefused) {
  using namespace k3::state_layout;
  const std::string p = path("s.k3state");
  write_state_file(p, make_state(3));
  const std::string original = slurp(p);
  // The PEND section, found by walking the sections.
  uint64_t at = kHeaderBytes, pend = 0, pend_end = 0;
  while (at + kSectionHeaderBytes <= original.size() - kChecksumBytes) {
    uint32_t t = 0;
    uint64_t len = 0;
    std::memcpy(&t, &original[at], 4);
    std::memcpy(&len, &original[at + 8], 8);
    if (t == kTagPending) {
      pend = at;
      pend_end = at + section_bytes(len);
      break;
    }
    at += section_bytes(len);
  }
  ASSERT_GT(pend, 0u);
  for (const uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{100000}}) {
    std::string section(kSectionHeaderBytes + pad8(8 + 4 * n), '\0');
    const uint64_t len = 8 + 4 * n;
    std::memcpy(&section[0], &kTagPending, 4);
    std::memcpy(&section[8], &len, 8);
    std::memcpy(&section[16], &n, 8);
    for (uint64_t i = 0; i < n; ++i) {
      const int32_t id = 7;
      std::memcpy(&section[24 + 4 * i], &id, 4);
    }
    std::string bytes = original.substr(0, pend) + section + original.substr(pend_end);
    const uint64_t total = bytes.size();
    std::memcpy(&bytes[16], &total, 8);
    reseal(bytes);
    spit(p, bytes);
    ExitCode code = ExitCode::kOk;
    const std::string msg = refusal(p, &code);
    if (n <= kMaxPendingIds) {
      EXPECT_EQ(code, ExitCode::kOk) << n << ": " << msg;
    } else {
      EXPECT_EQ(code, ExitCode::kBadInput) << n;
      EXPECT_NE(
          msg.find(p + ": malformed state file: " + std::to_string(n) + " pending ids; a saved state holds at most 1"),
          std::string::npos)
          << msg;
    }
  }
  // The writer never makes such a file.
  ConversationState s = make_state(3);
  s.pending = {1, 2};
  EXPECT_THROW(write_state_file(path("w.k3state"), s), Error);
}
