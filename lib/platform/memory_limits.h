// Layer platform: what the machine offers, from /proc and /sys (memory, cgroups, mounts, disks, CPU).
//
// How much memory this process may actually use: the smallest of the
// kernel's MemAvailable, the room left under the memory cgroup limit
// (cgroup v2 memory.max - memory.current, or v1 memory.limit_in_bytes -
// memory.usage_in_bytes, the tightest along the cgroup's ancestors), so a
// container's limit is honoured, and the room left under the address-space
// limit (RLIMIT_AS, `ulimit -v`: its soft limit in /proc/self/limits less
// VmSize in /proc/self/status), past which every allocation fails however
// much memory is free. k3-forward's memory plan, the resident weights and
// k3-doctor all read it here.
#pragma once

#include <cstdint>
#include <string>

#include "platform/cgroup_memory.h"
#include "platform/meminfo.h"

namespace k3 {

struct MemoryLimits {
  MemInfo meminfo;                     // every /proc/meminfo figure k3 uses
  CgroupMemory cgroup;                 // v1 and v2 limits, where they are set, usage there
  uint64_t mem_available = 0;          // MemAvailable (MemTotal on kernels before 3.14); 0: unknown
  bool cgroup_limited = false;         // a cgroup limit is set (it may be 0: then nothing fits)
  uint64_t cgroup_limit = 0;           // the effective cgroup limit when cgroup_limited
  uint64_t cgroup_usage = 0;           // usage where that limit is set
  std::string cgroup_source;           // "cgroup v2 /sys/fs/cgroup/..../memory.max", or empty
  bool address_space_limited = false;  // RLIMIT_AS has a soft limit
  uint64_t address_space_limit = 0;    // that limit in bytes
  uint64_t address_space_used = 0;     // VmSize: the address space this process holds already
  // K3_AVAILABLE_MEMORY=<bytes> plans as if the machine had this much
  // available (to see what a smaller machine would be told); the cgroup
  // limit still applies. 0: not set. A value that is no byte count is
  // refused (exit 2) when the limits are read.
  uint64_t override_bytes = 0;
  uint64_t available() const;  // min of the known figures; UINT64_MAX when nothing is known
};

// K3_AVAILABLE_MEMORY's value as bytes: decimal digits only, 1 to 2^60.
// Anything else (-1, 2^64, "8G", "") is a usage error (exit 2) naming the
// variable, never ignored: a wrong value silently ignored plans for the
// wrong machine.
uint64_t parse_available_memory_override(const char* value);

// Reads /proc/meminfo, /proc/self/cgroup, /proc/self/mountinfo and the
// cgroup limit files under `root` ("" or "/" for the real system; tests point
// it at a recorded or fake tree).
MemoryLimits read_memory_limits(const std::string& root = "");

}  // namespace k3
