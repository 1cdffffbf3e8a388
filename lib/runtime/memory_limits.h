// How much memory this process may actually use: the smaller of the
// kernel's MemAvailable and the room left under the memory cgroup limit
// (cgroup v2 memory.max - memory.current, or v1 memory.limit_in_bytes -
// memory.usage_in_bytes), so a container's limit is honoured.
#pragma once

#include <cstdint>
#include <string>

namespace k3 {

struct MemoryLimits {
  uint64_t mem_available = 0;   // /proc/meminfo MemAvailable (0: unknown)
  uint64_t cgroup_limit = 0;    // 0: none found
  uint64_t cgroup_usage = 0;
  std::string cgroup_source;
  // K3_AVAILABLE_MEMORY=<bytes> plans as if the machine had this much
  // available (to see what a smaller machine would be told); the cgroup
  // limit still applies.
  uint64_t override_bytes = 0;    // "cgroup v2 /sys/fs/cgroup/..../memory.max", or empty
  uint64_t available() const;   // min of the known figures; UINT64_MAX when nothing is known
};

// Reads /proc/meminfo and /proc/self/cgroup under `root` ("" for the real
// system; tests point it at a fake tree).
MemoryLimits read_memory_limits(const std::string& root = "");

}  // namespace k3
