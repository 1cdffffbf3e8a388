#include "doctor/doctor.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/byte_format.h"
#include "common/error.h"
#include "doctor/checks.h"
#include "doctor/next_steps.h"
#include "draft/dspark_config.h"
#include "draft/dspark_memory.h"
#include "kernels/matmul.h"
#include "platform/system_root.h"

namespace k3::doctor {

namespace fs = std::filesystem;

namespace {
constexpr uint64_t kSmallRequest = 1'000'000;  // a contrast point: 1 MB reads
constexpr size_t kK3ShardCount = 96;

uint64_t safetensors_bytes_in(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::error_code fe;
    if (e.is_regular_file(fe) && e.path().extension() == ".safetensors") n += e.file_size(fe);
  }
  return n;
}
// The directories to check: the model's, the trunk's (what each still
// needs stored) and --probe-file's.
std::vector<StorageFacts> gather_directories(const SystemRoot& root, const DoctorOptions& o, const CheckpointFacts& ck,
                                             const std::optional<TrunkInfo>& trunk) {
  const ModelBytes& mb = ck.bytes;
  std::vector<StorageFacts> storage;
  if (!o.model_dir.empty()) {
    StorageFacts s = gather_storage(root, "model", o.model_dir, "");
    if (ck.opened) {
      s.needed_why = "the checkpoint is here (" + format_bytes(ck.shard_bytes) + ")";
    } else {
      const uint64_t have = safetensors_bytes_in(s.dir);
      s.needed_bytes = kK3CheckpointBytes > have ? kK3CheckpointBytes - have : 0;
      s.needed_why = "the Kimi-K3 checkpoint needs " + format_bytes(kK3CheckpointBytes) + ", " + format_bytes(have) +
                     " of shards are here";
      s.need_is_fatal = true;
    }
    storage.push_back(std::move(s));
  }
  if (!o.trunk_dir.empty()) {
    StorageFacts s = gather_storage(root, "trunk", o.trunk_dir, "");
    if (trunk && trunk->has_bin && trunk->has_json) {
      s.needed_why = "the trunk is here (" + format_bytes(trunk->bin_bytes) + ")";
    } else {
      const uint64_t have = trunk ? trunk->bin_bytes : 0;
      s.needed_bytes = mb.trunk() > have ? mb.trunk() - have : 0;
      s.needed_why = "a packed trunk needs about " + format_bytes(mb.trunk());
      // Both on one filesystem: the checkpoint's shortfall competes for the same space.
      if (!storage.empty() && storage[0].exists && s.exists && storage[0].dev_major == s.dev_major &&
          storage[0].dev_minor == s.dev_minor && storage[0].needed_bytes > 0) {
        s.needed_bytes += storage[0].needed_bytes;
        s.needed_why += ", plus the checkpoint's " + format_bytes(storage[0].needed_bytes) + " on the same filesystem";
      }
    }
    storage.push_back(std::move(s));
  }
  if (!o.probe_file.empty()) {
    struct stat pst;
    if (::stat(o.probe_file.c_str(), &pst) != 0 || !S_ISREG(pst.st_mode))
      throw Error(ExitCode::kUsage,
                  "--probe-file " + o.probe_file +
                      (::stat(o.probe_file.c_str(), &pst) != 0
                           ? ": no such file"
                           : ": is not a regular file (the probe reads a file of the disk to measure)"));
    fs::path parent = fs::path(o.probe_file).parent_path();
    StorageFacts s = gather_storage(root, "probe", parent.empty() ? "." : parent.string(), o.probe_file);
    s.needed_why = "nothing needs to be stored here";
    storage.push_back(std::move(s));
  }
  return storage;
}

// The bandwidth probe: expert-sized and 1 MB reads at queue depths 1, 4, 16
// on the largest file of each directory (or only on --probe-file); the
// others get a note saying why they were not measured.
void probe_directories(std::vector<StorageFacts>& storage, const DoctorOptions& o, uint64_t expert_request) {
  std::vector<StorageFacts*> to_probe;
  for (StorageFacts& s : storage) {
    if (!s.exists) continue;
    if (!o.probe_file.empty() && s.label != "probe") {
      s.probe_note = "measured on --probe-file instead";
      s.probe_elsewhere = true;
      continue;
    }
    if (!o.probe) {
      s.probe_note = "disabled with --no-probe";
    } else if (s.largest_file.empty() || s.largest_bytes < kMinProbeFileBytes) {
      s.probe_note =
          "no file of at least " + format_bytes(kMinProbeFileBytes) + " in " + s.dir +
          " to read (largest: " + (s.largest_file.empty() ? std::string("none") : format_bytes(s.largest_bytes)) + ")";
    } else {
      to_probe.push_back(&s);
    }
  }
  if (to_probe.empty()) return;
  ProbeLimits lim;
  lim.seconds = o.probe_seconds / to_probe.size();
  lim.max_bytes = o.probe_max_bytes / to_probe.size();
  lim.request_bytes = {expert_request};
  if (kSmallRequest != expert_request) lim.request_bytes.push_back(kSmallRequest);
  for (StorageFacts* s : to_probe) s->probe = probe_read_bandwidth(s->largest_file, lim);
}

// The bandwidth the forecast uses: the best expert-sized reads measured
// (--probe-file's first, then the model's, then the trunk's disk), or an
// assumed NVMe's, said so.
Bandwidth forecast_bandwidth(const std::vector<StorageFacts>& storage, const DoctorOptions& o,
                             uint64_t expert_request) {
  Bandwidth bw;
  for (const char* label : {"probe", "model", "trunk"})
    for (const StorageFacts& s : storage)
      if (!bw.measured && s.label == label && s.probe && s.probe->error.empty()) {
        const double best = s.probe->best_mb_per_s(expert_request);
        if (best <= 0) continue;
        int depth = 0;
        for (const ProbePoint& p : s.probe->points)
          if (!p.skipped && p.request_bytes == (expert_request + 4095) / 4096 * 4096 && p.mb_per_s() == best)
            depth = p.queue_depth;
        bw.bytes_per_s = best * 1e6;
        bw.measured = true;
        bw.how = "(measured on " + s.probe->file + ": " + format_bytes(expert_request) + " " +
                 (s.probe->direct ? "O_DIRECT" : "buffered") + " reads at queue depth " + std::to_string(depth) +
                 ", the best depth)";
      }
  if (!bw.measured) {
    bw.bytes_per_s = kAssumedBandwidth;
    bw.how = "(ASSUMED: a typical NVMe SSD; nothing was measured)";
    bw.advice_if_assumed = !o.probe ? "bandwidth was not measured (--no-probe): run without it for a measured forecast"
                                    : "bandwidth was not measured (no large file to read): re-run once the checkpoint "
                                      "or trunk is on this disk, or pass --probe-file";
  }
  return bw;
}

}  // namespace

Report run_doctor(const DoctorOptions& o) {
  const SystemRoot root = SystemRoot::from_flag_or_env(o.root);
  Report r;
  r.root = root.root();

  // Facts first; checks are derived once everything is known (the memlock
  // check needs the recommended preset, the forecast needs the bandwidth).
  const CpuFeatures cpu = detect_cpu(root, kernels::kernel_target_name());
  const MemoryFacts mem = gather_memory(root);
  const CheckpointFacts ck = gather_checkpoint(o.model_dir);
  std::optional<TrunkInfo> trunk;
  if (!o.trunk_dir.empty()) {
    const std::string why = o.model_dir.empty() ? "no --model given to compare it with"
                            : !ck.opened        ? "the checkpoint in " + o.model_dir + " did not open"
                                                : "cannot fingerprint the checkpoint: " + ck.fingerprint_error;
    trunk = inspect_trunk(o.trunk_dir, o.model_dir, ck.fingerprint ? &*ck.fingerprint : nullptr,
                          ck.expected_trunk ? &*ck.expected_trunk : nullptr, why);
  }
  const ModelBytes& mb = ck.bytes;
  std::vector<StorageFacts> storage = gather_directories(root, o, ck, trunk);
  const uint64_t expert_request = std::max<uint64_t>(mb.one_expert, 4096);
  probe_directories(storage, o, expert_request);
  Bandwidth bw = forecast_bandwidth(storage, o, expert_request);

  // --draft: counted as k3-forward --draft counts it (resident, or streamed on
  // the presets whose trunk streams in row blocks); refused as it refuses it.
  RunRequest run;
  if (!o.draft_dir.empty()) {
    const DSparkConfig draft = load_dspark_config(o.draft_dir);
    check_draft_fits(draft, ck.plan_model.config, o.draft_dir);
    run.draft = dspark_memory(draft);
    run.state_snapshots = static_cast<uint64_t>(draft.block_size);  // its rollback copies, as --draft's run holds
  }
  std::optional<PresetForecast> rec;
  if (mem.usable) rec = recommend_preset(*mem.usable, ck.plan_model, mb, o.hit_rate, run);

  add_cpu_checks(r, cpu);
  add_gpu_check(r, root);
  add_memory_checks(r, mem, rec, (ck.opened ? ck.shards : kK3ShardCount) + 1);
  if (storage.empty()) {
    Check& k = r.add("storage", "directories");
    k.status = Status::kWarn;
    k.summary = "no --model or --trunk given: no disk was checked or measured";
    k.advice = "pass --model DIR and --trunk DIR (or --probe-file FILE) to measure the disk they are on";
  }
  for (const StorageFacts& s : storage) add_storage_checks(r, s, expert_request);
  add_checkpoint_checks(r, ck, o.trunk_dir, trunk ? &*trunk : nullptr);
  add_forecast(r, mem, ck, rec, bw, o.hit_rate, run);
  std::optional<DecodeProbe> decode;
  if (o.probe) decode = probe_decode(0.3);
  add_compression_check(r, rec ? *rec : forecast_preset(presets().front(), ck.plan_model, mb, o.hit_rate, run), bw,
                        decode, trunk ? &*trunk : nullptr, cpu.logical_cpus);
  std::optional<PrefillProbe> prefill;
  if (o.probe) prefill = probe_prefill(0.2);
  const FirstTokenForecast first_token = add_first_token_check(
      r, mem, ck.plan_model, rec ? rec->preset : presets().front(), bw, prefill, cpu.logical_cpus, o.prompt_tokens);
  add_vulkan_check(r, root, first_token, o.prompt_tokens, prefill.has_value());
  NextStepFacts next;
  next.model_dir = o.model_dir;
  next.trunk_dir = o.trunk_dir;
  next.trunk_ready = trunk && trunk->match == TrunkMatch::kMatches;
  next.draft_dir = o.draft_dir;
  if (rec) next.preset = rec->preset.name;
  r.next_steps = next_steps(next);
  return r;
}

}  // namespace k3::doctor
