#include "platform/memory_limits.h"

#include <charconv>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "common/error.h"
#include "platform/kernel_limits.h"
#include "platform/system_file.h"

namespace k3 {

namespace {
// The largest K3_AVAILABLE_MEMORY accepted: 1 EiB, far above any machine,
// well below where byte arithmetic could wrap.
constexpr uint64_t kMaxOverride = uint64_t{1} << 60;

// VmSize of /proc/self/status in bytes ("VmSize:  123456 kB"); 0 when absent.
uint64_t vm_size(std::string_view status) {
  const size_t at = status.find("\nVmSize:");
  if (at == std::string_view::npos) return 0;
  const std::optional<uint64_t> kb = parse_leading_uint(status.substr(at + 8));
  return kb && *kb < (uint64_t{1} << 50) ? *kb * 1024 : 0;
}
}  // namespace

uint64_t parse_available_memory_override(const char* value) {
  const std::string_view s(value);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  // from_chars takes no sign, spaces or suffix: "-1", " 5", "8G" all stop short.
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v == 0 || v > kMaxOverride) {
    std::string shown(s.substr(0, 40));
    for (char& c : shown)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    throw Error(ExitCode::kUsage, "K3_AVAILABLE_MEMORY=\"" + shown +
                                      "\" is not a byte count: give a whole number of "
                                      "bytes from 1 to " +
                                      std::to_string(kMaxOverride) + " (e.g. 16000000000), or unset it");
  }
  return v;
}

uint64_t MemoryLimits::available() const {
  uint64_t a = mem_available ? mem_available : UINT64_MAX;
  if (override_bytes) a = override_bytes;
  if (cgroup_limited) {
    const uint64_t room = cgroup_limit > cgroup_usage ? cgroup_limit - cgroup_usage : 0;
    if (room < a) a = room;
  }
  if (address_space_limited) {
    const uint64_t room = address_space_limit > address_space_used ? address_space_limit - address_space_used : 0;
    if (room < a) a = room;
  }
  return a;
}

MemoryLimits read_memory_limits(const std::string& root) {
  MemoryLimits m;
  if (const char* env = std::getenv("K3_AVAILABLE_MEMORY")) m.override_bytes = parse_available_memory_override(env);
  m.meminfo = parse_meminfo(read_system_file(root, "/proc/meminfo").value_or(""));
  m.mem_available = m.meminfo.available.value_or(m.meminfo.total.value_or(0));
  m.cgroup = read_cgroup_memory(root.empty() ? "/" : root);
  if (const CgroupLimit* lim = m.cgroup.effective()) {
    m.cgroup_limited = true;
    m.cgroup_limit = *lim->limit;
    m.cgroup_usage = lim->usage.value_or(0);
    const bool v1 = lim == &m.cgroup.v1;
    m.cgroup_source = std::string(v1 ? "cgroup v1 " : "cgroup v2 ") + lim->limit_dir +
                      (v1 ? "/memory.limit_in_bytes" : "/memory.max") +
                      (lim->limit_unreadable ? " (not a byte count, taken as 0)" : "");
  }
  // RLIMIT_AS as the process sees it (a recorded tree's files under `root`).
  const ResourceLimit as =
      parse_proc_limit(read_system_file(root, "/proc/self/limits").value_or(""), "Max address space");
  if (as.soft) {
    m.address_space_limited = true;
    m.address_space_limit = *as.soft;
    m.address_space_used = vm_size(read_system_file(root, "/proc/self/status").value_or(""));
  }
  return m;
}

}  // namespace k3
