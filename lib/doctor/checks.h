// The facts k3-doctor gathers and the checks it derives from them, one
// file per area (cpu_check.cpp, memory_check.cpp, storage_check.cpp,
// checkpoint_check.cpp, forecast_check.cpp); doctor.cpp runs them in order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "doctor/decode_probe.h"
#include "doctor/model_bytes.h"
#include "doctor/prefill_probe.h"
#include "doctor/preset_forecast.h"
#include "doctor/read_bandwidth_probe.h"
#include "doctor/report.h"
#include "planning/first_token_forecast.h"
#include "platform/block_device.h"
#include "platform/cgroup_memory.h"
#include "platform/cpu_features.h"
#include "platform/kernel_limits.h"
#include "platform/meminfo.h"
#include "platform/memory_limits.h"
#include "platform/system_root.h"
#include "trunk/match.h"

namespace k3::doctor {

// ---- CPU
void add_cpu_checks(Report& r, const CpuFeatures& cpu);
// NVIDIA/AMD GPUs from /sys/class/drm (and /dev/nvidiactl on the live system).
void add_gpu_check(Report& r, const SystemRoot& root);
// The Vulkan devices --gpu can use (live system only): memory, fma fused or
// emulated, the FP32 rate, and --gpu recommended where a device beats the
// CPU's prefill: `cpu` is the first-token forecast on the CPU for a prompt of
// `tokens` (add_first_token_check's), `cpu_measured` whether its rate was.
void add_vulkan_check(Report& r, const SystemRoot& root, const FirstTokenForecast& cpu, uint64_t tokens,
                      bool cpu_measured);

// ---- Memory
struct MemoryFacts {
  MemInfo mem;
  CgroupMemory cgroup;
  uint64_t override_bytes = 0;  // K3_AVAILABLE_MEMORY, 0 when not set
  std::optional<uint64_t>
      usable;  // platform/memory_limits' available(): min(MemAvailable, cgroup room, RLIMIT_AS room)
  bool address_space_limited = false;             // RLIMIT_AS (ulimit -v) is set
  uint64_t address_space_limit = 0, vm_size = 0;  // its soft limit, and the address space held already
  ResourceLimit memlock, nofile;
  std::string thp;  // "always", "madvise", "never", "" (absent)
  std::optional<uint64_t> max_map_count;
};
MemoryFacts gather_memory(const SystemRoot& root);
void add_memory_checks(Report& r, const MemoryFacts& m, const std::optional<PresetForecast>& recommended,
                       size_t files_to_open);

// ---- Storage (one directory: the model's or the trunk's)
struct StorageFacts {
  std::string label;  // "model", "trunk", "probe"
  std::string dir;
  bool exists = false;
  uint64_t free_bytes = 0;
  uint64_t fs_bytes = 0;
  std::string fs_type, fs_source;
  uint32_t dev_major = 0, dev_minor = 0;
  BlockDevice disk;
  std::string largest_file;  // candidate for the probe
  uint64_t largest_bytes = 0;
  int direct_open = -1;  // 1 works, 0 refused, -1 could not be tried
  std::string direct_note;
  std::optional<ProbeResult> probe;
  std::string probe_note;        // why it was skipped
  bool probe_elsewhere = false;  // skipped because --probe-file was measured instead
  uint64_t needed_bytes = 0;     // more space still needed here
  std::string needed_why;
  bool need_is_fatal = false;  // the run cannot start without it
};
StorageFacts gather_storage(const SystemRoot& root, const std::string& label, const std::string& dir,
                            const std::string& probe_file);
void add_storage_checks(Report& r, const StorageFacts& s, uint64_t expert_request);

// ---- Checkpoint and trunk
struct CheckpointFacts {
  bool given = false;
  bool opened = false;
  std::string error;
  size_t shards = 0, tensors = 0;
  uint64_t shard_bytes = 0, index_total = 0;
  bool config_loaded = false;
  std::string config_error;
  std::optional<SourceFingerprint> fingerprint;  // what a trunk packed from it records
  std::string fingerprint_error;
  // The tensor table k3-pack writes for this model (layout_trunk of its
  // manifest), when config.json loads: a trunk's table must equal it.
  std::optional<TrunkLayout> expected_trunk;
  ModelBytes bytes;          // from the config, or the real K3's
  std::string bytes_source;  // where `bytes` came from
  PlanModel plan_model;      // what k3-forward's memory planner needs, from the same source
};
CheckpointFacts gather_checkpoint(const std::string& model_dir);
void add_checkpoint_checks(Report& r, const CheckpointFacts& c, const std::string& trunk_dir, const TrunkInfo* trunk);

// ---- Forecast
struct Bandwidth {
  double bytes_per_s = 0;
  bool measured = false;
  std::string how;                // "measured on FILE: 17.5 MB O_DIRECT reads, queue depth 16"
  std::string advice_if_assumed;  // what to do to get it measured
};
// `run`: what every preset's plan holds besides the standard run (--draft),
// in the table as in the recommendation.
void add_forecast(Report& r, const MemoryFacts& m, const CheckpointFacts& c,
                  const std::optional<PresetForecast>& recommended, const Bandwidth& bw, std::optional<double> hit_rate,
                  const RunRequest& run);

// forecast/compression: disk-bound or decode-bound with a compressed trunk,
// and whether to pack with --compress (compression_check.cpp). `probe` is
// empty when probing was disabled; `trunk` null when none was given.
void add_compression_check(Report& r, const PresetForecast& forecast, const Bandwidth& bw,
                           const std::optional<DecodeProbe>& probe, const TrunkInfo* trunk, int cores);

// forecast/first_token: the time to the first token of a prompt of `tokens`
// with `preset` (first_token_check.cpp). `probe` is empty when probing was
// disabled (the CPU rate is then assumed, and said to be).
// Returns the forecast (the vulkan check compares the devices with it).
FirstTokenForecast add_first_token_check(Report& r, const MemoryFacts& m, const PlanModel& pm, const Preset& preset,
                                         const Bandwidth& bw, const std::optional<PrefillProbe>& probe, int cores,
                                         uint64_t tokens);

}  // namespace k3::doctor
