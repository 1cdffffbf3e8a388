#include "platform/memory_limits.h"

#include <cstdlib>

#include "platform/system_file.h"

namespace k3 {

uint64_t MemoryLimits::available() const {
  uint64_t a = mem_available ? mem_available : UINT64_MAX;
  if (override_bytes) a = override_bytes;
  if (cgroup_limited) {
    const uint64_t room = cgroup_limit > cgroup_usage ? cgroup_limit - cgroup_usage : 0;
    if (room < a) a = room;
  }
  return a;
}

MemoryLimits read_memory_limits(const std::string& root) {
  MemoryLimits m;
  if (const char* env = std::getenv("K3_AVAILABLE_MEMORY")) m.override_bytes = std::strtoull(env, nullptr, 10);
  m.meminfo = parse_meminfo(read_system_file(root, "/proc/meminfo").value_or(""));
  m.mem_available = m.meminfo.available.value_or(m.meminfo.total.value_or(0));
  m.cgroup = read_cgroup_memory(root.empty() ? "/" : root);
  if (const CgroupLimit* lim = m.cgroup.effective()) {
    m.cgroup_limited = true;
    m.cgroup_limit = *lim->limit;
    m.cgroup_usage = lim->usage.value_or(0);
    const bool v1 = lim == &m.cgroup.v1;
    m.cgroup_source = std::string(v1 ? "cgroup v1 " : "cgroup v2 ") + lim->limit_dir +
                      (v1 ? "/memory.limit_in_bytes" : "/memory.max");
  }
  return m;
}

}  // namespace k3
