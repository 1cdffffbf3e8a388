#include "runtime/memory_limits.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace k3 {

namespace {
bool read_u64(const std::string& path, uint64_t* out) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s) || s == "max") return false;
  try {
    *out = std::stoull(s);
  } catch (...) {
    return false;
  }
  return true;
}
}  // namespace

uint64_t MemoryLimits::available() const {
  uint64_t a = mem_available ? mem_available : UINT64_MAX;
  if (override_bytes) a = override_bytes;
  // v1 reports a huge number (page-counter max) when unlimited.
  if (cgroup_limit && cgroup_limit < (1ull << 60)) {
    uint64_t room = cgroup_limit > cgroup_usage ? cgroup_limit - cgroup_usage : 0;
    if (room < a) a = room;
  }
  return a;
}

MemoryLimits read_memory_limits(const std::string& root) {
  MemoryLimits m;
  if (const char* env = std::getenv("K3_AVAILABLE_MEMORY")) m.override_bytes = std::strtoull(env, nullptr, 10);
  {
    std::ifstream f(root + "/proc/meminfo");
    std::string key;
    uint64_t kb;
    std::string unit;
    while (f >> key >> kb) {
      std::getline(f, unit);
      if (key == "MemAvailable:") m.mem_available = kb * 1024;
    }
  }
  std::ifstream cg(root + "/proc/self/cgroup");
  std::string line;
  while (std::getline(cg, line)) {
    // "0::/path" (v2) or "N:memory:/path" / "N:cpu,memory:/path" (v1).
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (path == "/") path = "";
    if (ctrls.empty()) {
      // Walk up from our cgroup: the tightest memory.max on the way applies.
      std::string p = path;
      for (;;) {
        uint64_t lim, use = 0;
        std::string dir = root + "/sys/fs/cgroup" + p;
        if (read_u64(dir + "/memory.max", &lim) && (m.cgroup_limit == 0 || lim < m.cgroup_limit)) {
          m.cgroup_limit = lim;
          read_u64(dir + "/memory.current", &use);
          m.cgroup_usage = use;
          m.cgroup_source = "cgroup v2 " + dir + "/memory.max";
        }
        if (p.empty()) break;
        p = p.substr(0, p.rfind('/'));
      }
    } else if (("," + ctrls + ",").find(",memory,") != std::string::npos) {
      std::string dir = root + "/sys/fs/cgroup/memory" + path;
      uint64_t lim, use = 0;
      if (read_u64(dir + "/memory.limit_in_bytes", &lim) && (m.cgroup_limit == 0 || lim < m.cgroup_limit)) {
        m.cgroup_limit = lim;
        read_u64(dir + "/memory.usage_in_bytes", &use);
        m.cgroup_usage = use;
        m.cgroup_source = "cgroup v1 " + dir + "/memory.limit_in_bytes";
      }
    }
  }
  return m;
}

}  // namespace k3
