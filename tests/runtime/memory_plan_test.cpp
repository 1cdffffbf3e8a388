// Memory limits from /proc and the cgroup files (v1 and v2, on fake trees),
// and the memory plan: budgets decide what is pinned and how many cache
// slots exist, state sizes follow the config, the forecast adds up.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "common/byte_format.h"
#include "common/error.h"
#include "expert_cache/expert_index.h"
#include "model/config.h"
#include "model/tensor_manifest.h"
#include "planning/memory_plan.h"
#include "platform/memory_limits.h"
#include "trunk/layout.h"
#include "trunk/plan.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {
const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";
void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}
fs::path fake_root(const std::string& tag) {
  fs::path r = fs::temp_directory_path() / ("k3-mem-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(r);
  put(r / "proc/meminfo", "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n");
  return r;
}
// The tiny model's trunk as hand-made sections: the embedding, 13 layers
// (layer 5 twice as large), and the head with its norm and lm_head.
TrunkLayout hand_layout(const ModelConfig& c) {
  TrunkLayout layout;
  uint64_t at = 0;
  auto add = [&](const std::string& name, int layer, uint64_t length) {
    TrunkSection s;
    s.name = name;
    s.layer = layer;
    s.offset = s.stored_offset = at;
    s.length = s.stored_length = length;
    at += length;
    layout.sections.push_back(s);
    return &layout.sections.back();
  };
  add("embedding", -1, 8448 * 128);
  for (int l = 0; l < 13; ++l) add("layer." + std::to_string(l), l, l == 5 ? 81920 : 40960);
  TrunkSection* head = add("head", -1, 4096 + 8448 * 128);
  head->tensors = {{"language_model.model.norm.weight", DType::kBF16, {64}, head->offset, 128},
                   {c.lm_head_name, DType::kBF16, {8448, 64}, head->offset + 4096, 8448 * 128}};
  layout.file_size = at;
  return layout;
}
}  // namespace

TEST(MemoryLimits, CgroupV2TightestAncestorWins) {
  fs::path r = fake_root("v2");
  put(r / "proc/self/cgroup", "0::/a/b\n");
  put(r / "sys/fs/cgroup/a/memory.max", "8589934592\n");
  put(r / "sys/fs/cgroup/a/memory.current", "1073741824\n");
  put(r / "sys/fs/cgroup/a/b/memory.max", "max\n");
  MemoryLimits m = read_memory_limits(r.string());
  EXPECT_EQ(m.mem_available, 20000000ull * 1024);
  EXPECT_EQ(m.cgroup_limit, 8589934592ull);
  EXPECT_EQ(m.available(), 8589934592ull - 1073741824ull);
  EXPECT_NE(m.cgroup_source.find("cgroup v2"), std::string::npos);
  fs::remove_all(r);
}

TEST(MemoryLimits, CgroupV1AndUnlimited) {
  fs::path r = fake_root("v1");
  put(r / "proc/self/cgroup", "4:cpu,cpuacct:/x\n3:memory:/job\n");
  put(r / "sys/fs/cgroup/memory/job/memory.limit_in_bytes", "4000000000\n");
  put(r / "sys/fs/cgroup/memory/job/memory.usage_in_bytes", "1000000000\n");
  MemoryLimits m = read_memory_limits(r.string());
  EXPECT_EQ(m.available(), 3000000000ull);
  put(r / "sys/fs/cgroup/memory/job/memory.limit_in_bytes", "9223372036854771712\n");  // v1 "unlimited"
  m = read_memory_limits(r.string());
  EXPECT_EQ(m.available(), 20000000ull * 1024);
  fs::remove_all(r);
}

TEST(MemoryPlan, BudgetsDecidePinningAndSlots) {
  const ModelConfig c = load_model_config(kTiny);
  const Checkpoint ck = Checkpoint::open(kTiny);
  const TrunkLayout layout = plan_trunk(expected_tensors(c), ck);
  const ExpertIndex idx(c, ck);
  ASSERT_GT(idx.slot_bytes(), 0u);
  EXPECT_EQ(idx.slot_bytes() % 4096, 0u);
  RunRequest req;
  req.trunk_budget = 0;
  req.cache_budget = 0;
  req.context = 1000;
  MemoryPlan p0 = plan_memory(c, layout, idx.slot_bytes(), req);
  EXPECT_TRUE(p0.pinned.empty());
  EXPECT_EQ(p0.streamed.size(), 14u);                                         // 13 layers + head
  EXPECT_EQ(p0.cache_slots, static_cast<uint64_t>(c.num_experts_per_token));  // the floor: one layer's top-k
  EXPECT_EQ(p0.min_slots, p0.cache_slots);
  EXPECT_GT(p0.stream_buffer_bytes, 0u);
  // Small sections: the prefetch allowance buys the deepest read-ahead.
  EXPECT_EQ(p0.stream_buffers, kMaxStreamBuffers);
  EXPECT_EQ(p0.stream_buffer_bytes, p0.stream_buffers * p0.stream_buffer_size);
  // KDA: H*D*D state + 3 conv carries of H*D, FP32; MLA: (kv_lora + rope) floats per position.
  const uint64_t H = c.kda_num_heads, D = c.kda_head_dim;
  EXPECT_EQ(p0.kda_state_bytes, c.num_kda_layers() * (H * D * D + 3 * 3 * H * D) * 4);
  EXPECT_EQ(p0.mla_cache_bytes, c.num_mla_layers() * 1000ull * (c.kv_lora_rank + c.qk_rope_head_dim) * 4);
  req.trunk_budget = 1ull << 40;
  req.cache_budget = 1ull << 40;
  MemoryPlan p1 = plan_memory(c, layout, idx.slot_bytes(), req);
  EXPECT_TRUE(p1.streamed.empty());
  EXPECT_EQ(p1.stream_buffer_bytes, 0u);
  EXPECT_EQ(p1.cache_slots, uint64_t(c.num_hidden_layers - c.first_k_dense_replace) * c.num_experts);
  EXPECT_EQ(p1.peak_rss, p1.pinned_bytes + p1.stream_buffer_bytes + p1.head_small_bytes + p1.cache_bytes +
                             p1.kda_state_bytes + p1.mla_cache_bytes + p1.activation_bytes + p1.io_bytes);
  EXPECT_GT(p1.peak_rss, p0.peak_rss);
  // A budget for all of it pins the embedding too, last; its rows are then
  // never read per token.
  uint64_t all = 0, embedding = 0, head = 0;
  for (const TrunkSection& s : layout.sections) {
    all += s.length;
    if (s.name == "embedding") embedding = s.length;
    if (s.name == "head") head = s.length;
  }
  ASSERT_GT(embedding, 0u);
  EXPECT_TRUE(p1.embedding_pinned);
  ASSERT_EQ(p1.pinned.size(), 15u);
  EXPECT_EQ(layout.sections[p1.pinned.back()].name, "embedding");
  EXPECT_EQ(p1.pinned_bytes, all);
  EXPECT_FALSE(p0.embedding_pinned);
  // One byte short of it all: every layer and the head pinned, the embedding
  // read row by row.
  req.trunk_budget = all - 1;
  MemoryPlan pe = plan_memory(c, layout, idx.slot_bytes(), req);
  EXPECT_TRUE(pe.streamed.empty());
  EXPECT_FALSE(pe.embedding_pinned);
  EXPECT_EQ(pe.pinned.size(), 14u);
  EXPECT_EQ(pe.pinned_bytes, all - embedding);
  EXPECT_EQ(p1.peak_rss - pe.peak_rss, embedding);
  // Room for the layers and the embedding but not the head: the head
  // streams (it costs a token its bytes), so the embedding stays on disk
  // though it would fit.
  ASSERT_GT(head, embedding);
  req.trunk_budget = all - head;
  MemoryPlan ph2 = plan_memory(c, layout, idx.slot_bytes(), req);
  EXPECT_TRUE(ph2.head_streamed);
  EXPECT_FALSE(ph2.embedding_pinned);
  EXPECT_EQ(ph2.pinned.size(), 13u);
  // Half the layers' bytes pins a prefix of them.
  req.trunk_budget = layout.layer_bytes() / 2;
  MemoryPlan ph = plan_memory(c, layout, idx.slot_bytes(), req);
  EXPECT_GT(ph.pinned.size(), 0u);
  EXPECT_LT(ph.pinned.size(), 14u);
  EXPECT_LE(ph.pinned_bytes, req.trunk_budget);
}

// Every term of a plan where most of the trunk streams, against values worked
// out by hand from the tiny config and a hand-made layout (not from the
// planner): 13 layer sections of 40960 bytes except layer 5 (81920), a head
// of a 128-byte norm and an aligned 8448 x 64 BF16 lm_head.
TEST(MemoryPlan, StreamedPlanTermsMatchHandComputedValues) {
  const ModelConfig c = load_model_config(kTiny);
  ASSERT_EQ(c.num_kda_layers(), 9);
  ASSERT_EQ(c.num_mla_layers(), 4);
  const TrunkLayout layout = hand_layout(c);

  RunRequest req;
  req.trunk_budget = 3 * 40960 + 1000;  // layers 0..2 fit; nothing later does
  req.cache_budget = 100000;
  req.context = 1000;
  req.batch = 16;
  req.sequences = 2;
  req.state_snapshots = 3;
  req.io_threads = 8;
  req.compute_threads = 1;
  req.tensor_count = 100;
  const MemoryPlan p = plan_memory(c, layout, 12288, req);

  EXPECT_EQ(p.pinned, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(p.streamed, (std::vector<int>{4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}));
  EXPECT_EQ(p.pinned_bytes, 122880u);
  EXPECT_EQ(p.embedding_bytes, 1081344u);
  // The head streams in blocks the size of the largest streamed layer
  // (81920 bytes = 640 rows of 128 bytes, a multiple of the 32 rows that fill
  // whole pages): ceil(8448 / 640) = 14 blocks; its norm is read once into
  // an aligned buffer plus a page.
  EXPECT_TRUE(p.head_streamed);
  EXPECT_EQ(p.head_block_rows, 640u);
  EXPECT_EQ(p.head_blocks, 14u);
  EXPECT_EQ(p.head_block_read_bytes, 81920u);
  EXPECT_EQ(p.head_small_bytes, 4096u + 4096u);
  // Buffers: the two a pipeline needs plus two more from the prefetch
  // allowance (the cap of 4), each the size of the largest unit.
  EXPECT_EQ(p.stream_buffers, 4);
  EXPECT_EQ(p.stream_buffer_size, 81920u);
  EXPECT_EQ(p.stream_buffer_bytes, 327680u);
  EXPECT_EQ(p.stream_staging_bytes, 0u);
  // Per token: layers 3..12 (nine of 40960, one of 81920) and the lm_head.
  EXPECT_EQ(p.streamed_read_bytes, 9u * 40960 + 81920 + 1081344);
  EXPECT_EQ(p.streamed_decoded_bytes, p.streamed_read_bytes);
  // Cache: 100000 / 12288 = 8 slots (above the floor of 4, below all 192).
  EXPECT_EQ(p.min_slots, 4u);
  EXPECT_EQ(p.cache_slots, 8u);
  EXPECT_EQ(p.cache_bytes, 98304u);
  // KDA per sequence: 9 layers x (6*16*16 state + 3 conv carries of 3*6*16)
  // floats = 9 x 2400 x 4 = 86400 bytes, kept for 2 sequences and 3
  // rollback snapshots. MLA per sequence: 4 layers x 1000 positions x
  // (32 + 8) floats = 640000 bytes, for 2 sequences.
  EXPECT_EQ(p.per_sequence_bytes, 86400u + 640000u);
  EXPECT_EQ(p.kda_state_bytes, 86400u * 5);
  EXPECT_EQ(p.mla_cache_bytes, 640000u * 2);
  // Activations, 16 rows of floats: the residual and AttnRes blocks
  // 64 x (13/4 + 2 + 8) = 832, the widest projection max(6*16*8 = 768,
  // 6*(16+8+16)*3 = 720, 160*3, 64*2*3) = 768, router scores 2*16,
  // latent experts 32*(2+4), logits 8448: 10272 floats a row; then the
  // attention scores, 6 heads x 1000 positions a row.
  EXPECT_EQ(p.batch, 16u);
  EXPECT_EQ(p.activation_bytes, 16u * 4 * 10272 + 16u * 4 * 6 * 1000);
  // Two 4 MiB embedding row buffers, 160 bytes per tensor of the index, 1 MiB
  // of stack per thread (8 I/O + 1 compute), 48 MiB for the program.
  EXPECT_EQ(p.io_bytes, 2u * (4u << 20) + 100u * 160 + 9u * (1u << 20) + (48u << 20));
  EXPECT_EQ(p.peak_rss, 122880u + 327680u + 0u + 8192u + 98304u + 432000u + 1280000u + 1041408u + 68173440u);
}

TEST(MemoryPlan, LongContextTermsFollowTheirFormulas) {
  // Every term of the plan at 32K, 64K, 128K and 256K positions, against its
  // formula written out here (the same hand layout and request as above,
  // with a resident draft model): the MLA cache and the draft's context grow
  // with every position, the attention scores of a row block are held for
  // at most 65,536 positions, the rest does not depend on the context.
  const ModelConfig c = load_model_config(kTiny);
  const TrunkLayout layout = hand_layout(c);
  RunRequest req;
  req.trunk_budget = 3 * 40960 + 1000;
  req.cache_budget = 100000;
  req.batch = 16;
  req.sequences = 2;
  req.state_snapshots = 3;
  req.io_threads = 8;
  req.compute_threads = 1;
  req.tensor_count = 100;
  req.draft.resident = 5000;
  req.draft.per_position = 24;
  const uint64_t kda_one = 86400, io = 2u * (4u << 20) + 100u * 160 + 9u * (1u << 20) + (48u << 20);
  for (uint64_t ctx : {uint64_t{32768}, uint64_t{65536}, uint64_t{131072}, uint64_t{262144}}) {
    SCOPED_TRACE("context " + std::to_string(ctx));
    req.context = ctx;
    const MemoryPlan p = plan_memory(c, layout, 12288, req);
    // MLA: 4 layers x ctx positions x (32 + 8) floats per sequence.
    const uint64_t mla_one = 4 * ctx * 40 * 4;
    EXPECT_EQ(p.per_sequence_bytes, kda_one + mla_one);
    EXPECT_EQ(p.kda_state_bytes, kda_one * 5);
    EXPECT_EQ(p.mla_cache_bytes, mla_one * 2);
    // 10272 floats a row (see above), then 6 heads x min(ctx, 65536) scores.
    EXPECT_EQ(p.activation_bytes, 16u * 4 * 10272 + 16u * 4 * 6 * std::min<uint64_t>(ctx, 65536));
    EXPECT_EQ(p.draft_bytes, 5000 + 24 * ctx);
    EXPECT_EQ(p.kept_state_bytes, 0u);
    EXPECT_EQ(p.io_bytes, io);
    EXPECT_EQ(p.pinned_bytes + p.stream_buffer_bytes + p.stream_staging_bytes + p.head_small_bytes + p.cache_bytes,
              122880u + 327680u + 0u + 8192u + 98304u);
    EXPECT_EQ(p.peak_rss, 122880u + 327680u + 8192u + 98304u + kda_one * 5 + mla_one * 2 + p.activation_bytes +
                              (5000 + 24 * ctx) + io);
  }
}

TEST(MemoryLimits, CgroupLimitOfZeroLeavesNothing) {
  fs::path r = fake_root("zero");
  put(r / "proc/self/cgroup", "0::/job\n");
  put(r / "sys/fs/cgroup/job/memory.max", "0\n");
  MemoryLimits m = read_memory_limits(r.string());
  EXPECT_TRUE(m.cgroup_limited);
  EXPECT_EQ(m.cgroup_limit, 0u);
  EXPECT_EQ(m.available(), 0u);  // not "no limit"
  fs::remove_all(r);
}

TEST(MemoryLimits, LinkToDevZeroIsRefusedNotRead) {
  fs::path r = fake_root("devzero");
  fs::remove(r / "proc/meminfo");
  fs::create_symlink("/dev/zero", r / "proc/meminfo");
  try {
    read_memory_limits(r.string());
    FAIL() << "a meminfo linked to /dev/zero was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("proc/meminfo: is not a regular file"), std::string::npos) << e.what();
  }
  fs::remove_all(r);
}

TEST(MemoryPlan, HugeContextsAreRefusedNotWrapped) {
  const ModelConfig c = load_model_config(kTiny);
  const Checkpoint ck = Checkpoint::open(kTiny);
  const TrunkLayout layout = plan_trunk(expected_tensors(c), ck);
  const ExpertIndex idx(c, ck);
  RunRequest req;
  req.trunk_budget = 0;
  req.cache_budget = 0;
  // Wrapping products would turn these into small forecasts.
  for (uint64_t ctx : {uint64_t{1} << 62, UINT64_MAX - 4, (uint64_t{1} << 63) - 1}) {
    req.context = ctx;
    try {
      MemoryPlan p = plan_memory(c, layout, idx.slot_bytes(), req);
      FAIL() << "context " << ctx << " planned as " << p.peak_rss << " bytes";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kResource);
      EXPECT_NE(std::string(e.what()).find("2^64"), std::string::npos) << e.what();
    }
  }
  // The largest context that fits 64 bits is planned exactly and grows with it.
  req.context = uint64_t{1} << 32;
  const MemoryPlan big = plan_memory(c, layout, idx.slot_bytes(), req);
  EXPECT_EQ(big.mla_cache_bytes, c.num_mla_layers() * (uint64_t{1} << 32) * (c.kv_lora_rank + c.qk_rope_head_dim) * 4);
  EXPECT_GT(big.peak_rss, big.mla_cache_bytes);
}

// The layer-major prefill's chunk: its carried state counted per token, by
// hand from the tiny config.
TEST(MemoryPlan, PrefillChunkCarriedStateCounted) {
  const ModelConfig c = load_model_config(kTiny);
  TrunkLayout layout;
  uint64_t at = 0;
  auto add = [&](const std::string& name, int layer, uint64_t length) {
    TrunkSection s;
    s.name = name;
    s.layer = layer;
    s.offset = s.stored_offset = at;
    s.length = s.stored_length = length;
    at += length;
    layout.sections.push_back(s);
    return &layout.sections.back();
  };
  add("embedding", -1, 8448 * 128);
  for (int l = 0; l < 13; ++l) add("layer." + std::to_string(l), l, 40960);
  TrunkSection* head = add("head", -1, 4096 + 8448 * 128);
  head->tensors = {{"language_model.model.norm.weight", DType::kBF16, {64}, head->offset, 128},
                   {c.lm_head_name, DType::kBF16, {8448, 64}, head->offset + 4096, 8448 * 128}};
  layout.file_size = at;
  RunRequest req;
  req.context = 1000;
  req.batch = 16;
  const MemoryPlan batches = plan_memory(c, layout, 12288, req);
  EXPECT_EQ(batches.chunk, 16u);
  EXPECT_EQ(batches.chunk_bytes, 0u);
  req.chunk = 8;  // below the batch: one batch per read
  EXPECT_EQ(plan_memory(c, layout, 12288, req).chunk, 16u);
  req.chunk = 1000;
  const MemoryPlan chunked = plan_memory(c, layout, 12288, req);
  EXPECT_EQ(chunked.chunk, 1000u);
  // Per token: p and the 4 block states, 5 x 64 floats = 1280 bytes; the
  // MoE rows: 4 experts x (id, weight, entry index: 16 bytes) = 64, and
  // floats: z 32 + shared output 64 + the sum of the expert outputs 32 =
  // 128 -> 512 (not 4 outputs; a group's outputs are a sub-batch's scratch).
  EXPECT_EQ(chunked.chunk_bytes, 1000u * (1280 + 64 + 512));
  EXPECT_EQ(chunked.peak_rss, batches.peak_rss + chunked.chunk_bytes);
  EXPECT_NE(chunked.describe(layout, c, req).find("prefill chunk     1000 tokens"), std::string::npos);
  EXPECT_FALSE(chunked.chunk_spilled);
  EXPECT_EQ(chunked.spill_file_bytes, 0u);

  // Spilled: the 4 block states and the shared output (1024 + 256 bytes a
  // token) go to the file; memory keeps p, the routing, z and the sum per
  // token, and 16 staged rows of each block.
  req.spill_chunk = true;
  const MemoryPlan spilled = plan_memory(c, layout, 12288, req);
  EXPECT_TRUE(spilled.chunk_spilled);
  EXPECT_EQ(spilled.spill_file_bytes, 1000u * (1024 + 256));
  EXPECT_EQ(spilled.chunk_bytes, 1000u * (256 + 64 + 256) + 16u * 1024);
  EXPECT_EQ(spilled.peak_rss, batches.peak_rss + spilled.chunk_bytes);
  EXPECT_NE(spilled.describe(layout, c, req).find("in a spill file beside the trunk"), std::string::npos);
  // No chunk beyond the batch: nothing to spill.
  req.chunk = 0;
  const MemoryPlan none = plan_memory(c, layout, 12288, req);
  EXPECT_FALSE(none.chunk_spilled);
  EXPECT_EQ(none.spill_file_bytes, 0u);
  EXPECT_EQ(none.peak_rss, batches.peak_rss);
}

TEST(MemoryPlan, StopCopiesAndKeptStatesFollowTheirFormulas) {
  // k3-serve's stoppable prompt passes hold one more KDA state per sequence
  // (each layer's state copied before it runs, to put it back), against its
  // formula from the config, written out here: a KDA state is heads x key
  // dim x value dim floats per KDA layer plus the short conv's K - 1 rows of
  // q, k and v. The kept states are the bytes asked for, nothing beside
  // them: a state on its way to disk is written from the kept state itself
  // and counts against those bytes until written (serve/conversation_cache.h).
  const ModelConfig c = load_model_config(kTiny);
  const TrunkLayout layout = hand_layout(c);
  RunRequest req;
  req.trunk_budget = 0;
  req.cache_budget = 0;
  req.context = 3000;
  req.sequences = 3;
  req.state_snapshots = 2;
  const MemoryPlan none = plan_memory(c, layout, 12288, req);
  req.kept_state_bytes = 5'000'000;
  const MemoryPlan before = plan_memory(c, layout, 12288, req);
  req.stoppable_passes = true;
  const MemoryPlan after = plan_memory(c, layout, 12288, req);

  const uint64_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel;
  const uint64_t kda_one = c.num_kda_layers() * (H * D * D + 3 * (K - 1) * H * D) * 4;
  EXPECT_EQ(plan_stop_copies(req), 3u);
  EXPECT_EQ(before.kda_state_bytes, kda_one * (3 + 2));
  EXPECT_EQ(after.kda_state_bytes, kda_one * (3 + 2 + 3));
  EXPECT_EQ(before.kept_state_bytes, 5'000'000u);
  EXPECT_EQ(after.kept_state_bytes, 5'000'000u);
  EXPECT_EQ(before.peak_rss - none.peak_rss, 5'000'000u);
  EXPECT_EQ(after.peak_rss - before.peak_rss, 3 * kda_one);
  // One sequence (k3-forward's shape, were it stoppable): one copy.
  req.sequences = 1;
  EXPECT_EQ(plan_stop_copies(req), 1u);
  EXPECT_EQ(plan_memory(c, layout, 12288, req).kda_state_bytes, kda_one * (1 + 2 + 1));

  // --plan says both.
  req.sequences = 3;
  const std::string text = after.describe(layout, c, req);
  EXPECT_NE(text.find("KDA state         " + std::to_string(c.num_kda_layers()) +
                      " layers x (3 sequences + 2 rollback copies + 3 copies to put back a stopped pass)"),
            std::string::npos)
      << text;
  const size_t kept = text.find("kept states       conversations between requests (");
  ASSERT_NE(kept, std::string::npos) << text;
  const std::string kept_line = text.substr(kept, text.find('\n', kept) - kept);
  EXPECT_TRUE(kept_line.ends_with(")  " + format_bytes(5'000'000))) << kept_line;
  const std::string plain = before.describe(layout, c, [&] {
    RunRequest r = req;
    r.stoppable_passes = false;
    return r;
  }());
  EXPECT_EQ(plain.find("stopped pass"), std::string::npos) << plain;
}

// The expert cache lent to the prefill's chunk (RunRequest::lend_cache): the
// lent bytes are the cache's beyond the chunk's own slots (kChunkExpertSlots,
// fewer than the floor of one layer's top-k: the chunk runs its experts one
// at a time), and the peak counts the larger of the chunk and them, not
// their sum, by formula from the plan that keeps the cache.
TEST(MemoryPlan, LentCachePeakIsTheLargerOfPrefillAndDecode) {
  const ModelConfig c = load_model_config(kTiny);
  const TrunkLayout layout = hand_layout(c);
  const uint64_t slot = 12288, top_k = 4;  // 4 experts per token
  ASSERT_LT(kChunkExpertSlots, top_k);
  const uint64_t kept_slots = kChunkExpertSlots * slot;
  RunRequest req;
  req.context = 1000;
  req.batch = 16;
  req.cache_budget = 40 * slot + 100;
  for (uint64_t chunk : {1000u, 100u}) {  // 1000: the chunk is larger; 100: the lent bytes are
    req.chunk = chunk;
    req.lend_cache = false;
    const MemoryPlan kept = plan_memory(c, layout, slot, req);
    ASSERT_EQ(kept.cache_slots, 40u);
    ASSERT_EQ(kept.min_slots, top_k);
    ASSERT_EQ(kept.chunk_slots, kChunkExpertSlots);
    EXPECT_EQ(kept.cache_lent_bytes, 0u);
    req.lend_cache = true;
    const MemoryPlan lent = plan_memory(c, layout, slot, req);
    const std::string what = "chunk " + std::to_string(chunk);
    EXPECT_EQ(lent.cache_lent_bytes, 40 * slot - kept_slots) << what;
    EXPECT_EQ(lent.cache_bytes, kept.cache_bytes) << what;  // decode still has the whole cache
    EXPECT_EQ(lent.chunk_bytes, kept.chunk_bytes) << what;
    const uint64_t rest = kept.peak_rss - kept.chunk_bytes - kept.cache_bytes;
    EXPECT_EQ(lent.peak_rss, rest + kept_slots + std::max(kept.chunk_bytes, 40 * slot - kept_slots)) << what;
    EXPECT_EQ(kept.peak_rss - lent.peak_rss, std::min(kept.chunk_bytes, 40 * slot - kept_slots)) << what;
  }
  EXPECT_GT(plan_memory(c, layout, slot, req).cache_lent_bytes, 0u);
  // Nothing to lend: no chunk beyond a batch; a cache holding every expert
  // (12 MoE layers x 16), which has nothing to refill.
  req.chunk = 16;
  EXPECT_EQ(plan_memory(c, layout, slot, req).cache_lent_bytes, 0u);
  // A cache at its floor still lends all but the chunk's slots: decode needs
  // the floor, the chunk does not.
  req.chunk = 1000;
  req.cache_budget = 0;
  const MemoryPlan at_floor = plan_memory(c, layout, slot, req);
  EXPECT_EQ(at_floor.cache_slots, top_k);
  EXPECT_EQ(at_floor.cache_lent_bytes, (top_k - kChunkExpertSlots) * slot);
  req.cache_budget = 192 * slot;
  const MemoryPlan all = plan_memory(c, layout, slot, req);
  EXPECT_EQ(all.cache_slots, 192u);
  EXPECT_EQ(all.cache_lent_bytes, 0u);
}

// The sequence state lent to the prefill's chunk (RunRequest::lend_state):
// the lent bytes are the sequences' KDA states and MLA caches at the context
// and the stop copies, less one layer's state a sequence (the larger of one
// KDA layer's state and one MLA layer's cache), by formula from the config
// written out here; the peak counts the larger of the chunk and them, not
// their sum; --plan says it; nothing is lent without a packed trunk or a
// chunk beyond a batch.
TEST(MemoryPlan, LentStatePeakIsTheLargerOfTheChunkAndTheState) {
  const ModelConfig c = load_model_config(kTiny);
  const TrunkLayout layout = hand_layout(c);
  const uint64_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel;
  const uint64_t kda_layer = (H * D * D + 3 * (K - 1) * H * D) * 4;
  RunRequest req;
  req.packed_trunk = true;
  req.trunk_budget = 0;
  req.cache_budget = 0;
  req.batch = 16;
  req.sequences = 2;
  req.stoppable_passes = true;
  // 40 positions: one KDA layer's state stays (9.6 kB against 6.4 kB of MLA
  // rows); 5000: one MLA layer's cache. Each side the larger at least once.
  ASSERT_GT(kda_layer, 40u * (c.kv_lora_rank + c.qk_rope_head_dim) * 4);
  ASSERT_LT(kda_layer, 5000u * (c.kv_lora_rank + c.qk_rope_head_dim) * 4);
  bool chunk_larger = false, state_larger = false;
  for (uint64_t context : {40u, 5000u}) {
    for (uint64_t chunk : {context, uint64_t{17}}) {
      req.context = context;
      req.chunk = chunk;
      req.lend_state = false;
      const MemoryPlan kept = plan_memory(c, layout, 12288, req);
      req.lend_state = true;
      const MemoryPlan lent = plan_memory(c, layout, 12288, req);
      const std::string what = "context " + std::to_string(context) + ", chunk " + std::to_string(chunk);
      const uint64_t mla_layer = context * (c.kv_lora_rank + c.qk_rope_head_dim) * 4;
      const uint64_t kda_all = c.num_kda_layers() * kda_layer, mla_all = c.num_mla_layers() * mla_layer;
      const uint64_t state = 2 * (kda_all + mla_all) + 2 * kda_all;  // 2 sequences, 2 stop copies
      const uint64_t stays = 2 * std::max(kda_layer, mla_layer);
      ASSERT_EQ(kept.state_lent_bytes, 0u) << what;
      EXPECT_EQ(kept.kda_state_bytes + kept.mla_cache_bytes, state) << what;
      EXPECT_EQ(lent.state_lent_bytes, state - stays) << what;
      EXPECT_EQ(lent.state_loan_file_bytes, 2 * (2 * kda_all + mla_all)) << what;
      EXPECT_EQ(lent.kda_state_bytes, kept.kda_state_bytes) << what;  // decode holds it all again
      EXPECT_EQ(lent.chunk_bytes, kept.chunk_bytes) << what;
      const uint64_t rest = kept.peak_rss - kept.chunk_bytes - state;
      EXPECT_EQ(lent.peak_rss, rest + stays + std::max(kept.chunk_bytes, state - stays)) << what;
      EXPECT_EQ(kept.peak_rss - lent.peak_rss, std::min(kept.chunk_bytes, state - stays)) << what;
      (kept.chunk_bytes > state - stays ? chunk_larger : state_larger) = true;
      const std::string text = lent.describe(layout, c, req);
      EXPECT_NE(text.find("the sequence state's " + format_bytes(state - stays) +
                          " lent to the chunk: one layer's in memory"),
                std::string::npos)
          << text;
      EXPECT_EQ(kept.describe(layout, c, req).find("lent to the chunk"), std::string::npos);
    }
  }
  EXPECT_TRUE(chunk_larger && state_larger);
  // Nothing lent: no chunk beyond a batch; no packed trunk (no place for the file).
  req.chunk = 16;
  EXPECT_EQ(plan_memory(c, layout, 12288, req).state_lent_bytes, 0u);
  req.chunk = 1000;
  req.packed_trunk = false;
  EXPECT_EQ(plan_memory(c, layout, 12288, req).state_lent_bytes, 0u);
}
