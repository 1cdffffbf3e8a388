#include <string>

#include "common/byte_format.h"
#include "doctor/checks.h"
#include "platform/system_root.h"

namespace k3::doctor {

namespace {
std::string opt_bytes(const std::optional<uint64_t>& v) { return v ? format_bytes(*v) : "unknown"; }
JsonValue opt_json(const std::optional<uint64_t>& v) { return v ? JsonValue(*v) : JsonValue(); }

// k3-forward keeps one file descriptor per shard plus the trunk and a few
// for its own use.
constexpr uint64_t kSpareFiles = 64;
// The kernel's default; a lower value means someone lowered it deliberately.
constexpr uint64_t kDefaultMaxMapCount = 65530;
}  // namespace

MemoryFacts gather_memory(const SystemRoot& root) {
  MemoryFacts m;
  // The reader k3-forward sizes its memory plan with, so the budget here is
  // the one it will be held to.
  const MemoryLimits lim = read_memory_limits(root.root());
  m.mem = lim.meminfo;
  m.cgroup = lim.cgroup;
  m.override_bytes = lim.override_bytes;
  if (lim.available() != UINT64_MAX) m.usable = lim.available();
  m.address_space_limited = lim.address_space_limited;
  m.address_space_limit = lim.address_space_limit;
  m.vm_size = lim.address_space_used;
  if (auto t = root.read("/proc/self/limits")) {
    m.memlock = parse_proc_limit(*t, "Max locked memory");
    m.nofile = parse_proc_limit(*t, "Max open files");
  }
  if (auto t = root.read("/sys/kernel/mm/transparent_hugepage/enabled")) m.thp = parse_thp_mode(*t);
  if (auto t = root.read("/proc/sys/vm/max_map_count")) m.max_map_count = parse_uint_file(*t);
  return m;
}

namespace {

// RAM and swap: whether a preset too large thrashes or is killed.
void add_ram_check(Report& r, const MemoryFacts& m) {
  Check& k = r.add("memory", "ram");
  k.status = m.mem.total ? Status::kOk : Status::kFail;
  k.summary = "MemTotal " + opt_bytes(m.mem.total) + ", MemAvailable " + opt_bytes(m.mem.available) + ", swap " +
              opt_bytes(m.mem.swap_total) + " (" + opt_bytes(m.mem.swap_free) + " free)";
  if (!m.mem.total) k.advice = "cannot read /proc/meminfo: is /proc mounted?";
  else if (m.mem.swap_total && *m.mem.swap_total > 0)
    k.advice = "swap is on: a preset larger than RAM would thrash instead of failing, so keep to the recommendation";
  else k.advice = "no swap: a preset larger than RAM is killed by the OOM killer rather than slowed down";
  k.details.set("mem_total_bytes", opt_json(m.mem.total))
      .set("mem_available_bytes", opt_json(m.mem.available))
      .set("swap_total_bytes", opt_json(m.mem.swap_total))
      .set("swap_free_bytes", opt_json(m.mem.swap_free));
}

// The cgroup memory limits (v1 and v2) and whether one decides the budget.
void add_cgroup_check(Report& r, const MemoryFacts& m) {
  Check& k = r.add("memory", "cgroup_limit");
  auto describe = [](const CgroupLimit& l, const char* file) {
    if (!l.hierarchy_found) return std::string("not in use");
    if (!l.limit) return std::string("no limit (") + l.dir + ")";
    if (l.limit_unreadable) return "0: " + l.limit_dir + "/" + file + " is not a byte count, taken as 0";
    return format_bytes(*l.limit) + " (" + l.limit_dir + "/" + file + ")";
  };
  k.summary = "cgroup v1: " + describe(m.cgroup.v1, "memory.limit_in_bytes") +
              "; cgroup v2: " + describe(m.cgroup.v2, "memory.max");
  auto lim = m.cgroup.effective_limit();
  k.status = Status::kOk;
  k.advice = lim && m.mem.available && *lim < *m.mem.available
                 ? "the cgroup limit, not the machine's free memory, decides the budget below"
                 : "no cgroup limit below the machine's available memory";
  auto dump = [&](const CgroupLimit& l) {
    JsonValue o = JsonValue::object();
    o.set("in_use", l.hierarchy_found)
        .set("cgroup_dir", l.dir)
        .set("limit_bytes", opt_json(l.limit))
        .set("limit_set_in", l.limit_dir)
        .set("usage_bytes", opt_json(l.usage));
    return o;
  };
  k.details.set("v1", dump(m.cgroup.v1)).set("v2", dump(m.cgroup.v2)).set("effective_limit_bytes", opt_json(lim));
}

// The usable budget the presets are sized against, and what bounds it.
void add_usable_check(Report& r, const MemoryFacts& m) {
  Check& k = r.add("memory", "usable");
  // A budget of 0 (memory.max 0, or all of it in use) is none at all.
  k.status = m.usable && *m.usable > 0 ? Status::kOk : Status::kFail;
  const CgroupLimit* lim = m.cgroup.effective();
  std::string cgroup = "cgroup limit none";
  if (lim) {
    cgroup = "cgroup limit " + format_bytes(*lim->limit);
    if (lim->usage) cgroup += " - " + format_bytes(*lim->usage) + " in use";
  }
  const std::string address_space = m.address_space_limited
                                        ? ", address-space limit (ulimit -v) " + format_bytes(m.address_space_limit) +
                                              " - " + format_bytes(m.vm_size) + " in use"
                                        : "";
  k.summary = "usable budget " + opt_bytes(m.usable) + " = min(" +
              (m.override_bytes ? "K3_AVAILABLE_MEMORY " + format_bytes(m.override_bytes)
                                : "MemAvailable " + opt_bytes(m.mem.available)) +
              ", " + cgroup + address_space + ")";
  k.advice = m.usable && *m.usable == 0 ? "nothing fits: " + cgroup +
                                              " leaves no memory; raise the cgroup's memory limit "
                                              "(memory.max / memory.limit_in_bytes) or run outside it"
             : m.usable ? "presets are sized against " + std::to_string(int(kUsableShare * 100)) +
                              "% of this; close other programs to raise it"
                        : "cannot tell how much memory is free";
  k.details.set("usable_bytes", opt_json(m.usable))
      .set("address_space_limit_bytes", m.address_space_limited ? JsonValue(m.address_space_limit) : JsonValue())
      .set("vm_size_bytes", m.address_space_limited ? JsonValue(m.vm_size) : JsonValue())
      .set("usable_share_for_presets", kUsableShare)
      .set("cgroup_usage_bytes", lim ? opt_json(lim->usage) : JsonValue())
      .set("override_bytes", m.override_bytes ? JsonValue(m.override_bytes) : JsonValue());
}

// Transparent hugepages, which the large pinned buffers want.
void add_hugepage_check(Report& r, const MemoryFacts& m) {
  Check& k = r.add("memory", "transparent_hugepages");
  k.status = m.thp == "never" ? Status::kWarn : Status::kOk;
  k.summary = m.thp.empty() ? "not reported by this kernel" : "mode " + m.thp;
  k.advice = m.thp == "never" ? "hugepages are off: the pinned trunk and expert cache pay more TLB misses; set "
                                "'madvise' in /sys/kernel/mm/transparent_hugepage/enabled"
                              : "fine for k3-forward's large buffers";
  k.details.set("mode", m.thp);
}

// Whether the recommended preset's resident bytes can be locked in RAM.
void add_memlock_check(Report& r, const MemoryFacts& m, const std::optional<PresetForecast>& rec) {
  Check& k = r.add("memory", "memlock_limit");
  const uint64_t pinned = rec ? rec->pinned_trunk + rec->cache : 0;
  const bool unlimited = m.memlock.found && !m.memlock.soft;
  const bool enough = unlimited || (m.memlock.found && *m.memlock.soft >= pinned);
  k.status = !m.memlock.found || enough ? Status::kOk : Status::kWarn;
  k.summary = !m.memlock.found ? "RLIMIT_MEMLOCK not reported"
              : unlimited      ? "RLIMIT_MEMLOCK unlimited"
                               : "RLIMIT_MEMLOCK " + format_bytes(*m.memlock.soft);
  if (rec) k.summary += "; the " + rec->preset.name + " preset keeps " + format_bytes(pinned) + " resident";
  k.advice = enough || !m.memlock.found
                 ? "the resident trunk and cache can be locked in RAM"
                 : "too low to lock the resident trunk and cache, which may then be paged out under pressure; raise "
                   "it (ulimit -l unlimited, LimitMEMLOCK=infinity, docker --ulimit memlock=-1)";
  k.details.set("soft_bytes", opt_json(m.memlock.soft))
      .set("hard_bytes", opt_json(m.memlock.hard))
      .set("unlimited", unlimited)
      .set("resident_bytes_wanted", pinned);
}

// File descriptors for every shard and the trunk.
void add_open_files_check(Report& r, const MemoryFacts& m, size_t files_to_open) {
  Check& k = r.add("memory", "open_files_limit");
  const uint64_t need = files_to_open + kSpareFiles;
  const bool unlimited = m.nofile.found && !m.nofile.soft;
  const bool enough = unlimited || (m.nofile.found && *m.nofile.soft >= need);
  k.status = !m.nofile.found || enough ? Status::kOk : Status::kWarn;
  k.summary = !m.nofile.found
                  ? "RLIMIT_NOFILE not reported"
                  : "RLIMIT_NOFILE " + (unlimited ? std::string("unlimited") : std::to_string(*m.nofile.soft)) +
                        ", k3-forward needs about " + std::to_string(need);
  k.advice = enough || !m.nofile.found ? "enough file descriptors for every shard and the trunk"
                                       : "raise it with ulimit -n " + std::to_string(need * 4);
  k.details.set("soft", opt_json(m.nofile.soft)).set("hard", opt_json(m.nofile.hard)).set("needed", need);
}

// vm.max_map_count against the kernel default.
void add_map_count_check(Report& r, const MemoryFacts& m) {
  Check& k = r.add("memory", "max_map_count");
  const bool ok = !m.max_map_count || *m.max_map_count >= kDefaultMaxMapCount;
  k.status = ok ? Status::kOk : Status::kWarn;
  k.summary =
      m.max_map_count ? "vm.max_map_count " + std::to_string(*m.max_map_count) : "vm.max_map_count not reported";
  k.advice = ok ? "enough memory mappings" : "below the kernel default: raise with sysctl vm.max_map_count=262144";
  k.details.set("max_map_count", opt_json(m.max_map_count));
}

}  // namespace

void add_memory_checks(Report& r, const MemoryFacts& m, const std::optional<PresetForecast>& rec,
                       size_t files_to_open) {
  add_ram_check(r, m);
  add_cgroup_check(r, m);
  add_usable_check(r, m);
  add_hugepage_check(r, m);
  add_memlock_check(r, m, rec);
  add_open_files_check(r, m, files_to_open);
  add_map_count_check(r, m);
}

}  // namespace k3::doctor
