// Memory limits from /proc and the cgroup files (v1 and v2, on fake trees),
// and the memory plan: budgets decide what is pinned and how many cache
// slots exist, state sizes follow the config, the forecast adds up.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "model/config.h"
#include "model/tensor_manifest.h"
#include "platform/memory_limits.h"
#include "runtime/expert_index.h"
#include "runtime/memory_plan.h"
#include "runtime/trunk_plan.h"

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
  PlanRequest req;
  req.trunk_budget = 0;
  req.cache_budget = 0;
  req.context = 1000;
  MemoryPlan p0 = plan_memory(c, layout, idx.slot_bytes(), req);
  EXPECT_TRUE(p0.pinned.empty());
  EXPECT_EQ(p0.streamed.size(), 14u);  // 13 layers + head
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
  EXPECT_EQ(p1.peak_rss, p1.pinned_bytes + p1.stream_buffer_bytes + p1.head_small_bytes + p1.cache_bytes + p1.kda_state_bytes +
                             p1.mla_cache_bytes + p1.activation_bytes + p1.io_bytes);
  EXPECT_GT(p1.peak_rss, p0.peak_rss);
  // Half the layers' bytes pins a prefix of them.
  req.trunk_budget = layout.layer_bytes() / 2;
  MemoryPlan ph = plan_memory(c, layout, idx.slot_bytes(), req);
  EXPECT_GT(ph.pinned.size(), 0u);
  EXPECT_LT(ph.pinned.size(), 14u);
  EXPECT_LE(ph.pinned_bytes, req.trunk_budget);
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
  PlanRequest req;
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
