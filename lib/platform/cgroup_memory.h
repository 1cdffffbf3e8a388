// The cgroup memory limit of this process, cgroup v1 and v2.
//
// Containers and systemd slices cap memory below what /proc/meminfo shows;
// a run sized from MemAvailable alone would be OOM-killed. The limit is found
// the way the kernel applies it: /proc/self/cgroup names this process's
// cgroup in each hierarchy, mountinfo says where that hierarchy is mounted
// (and which part of it), and every ancestor up to the mount's root can cap
// it, so the effective limit is the smallest along the way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "platform/mountinfo.h"

namespace k3 {

struct CgroupMembership {
  int hierarchy_id = 0;
  std::vector<std::string> controllers;  // empty for the v2 unified hierarchy
  std::string path;                      // "/user.slice/..." relative to the hierarchy root
};

// Parses /proc/self/cgroup ("4:memory:/docker/abc", "0::/system.slice/x").
std::vector<CgroupMembership> parse_proc_cgroup(const std::string& text);

// A limit file's value: "max" (v2) or a v1 value of 2^62 and above (v1's
// "unlimited" is LONG_MAX rounded down to a page) mean no limit -> nullopt.
// Returns false in *ok for text that is not a limit.
std::optional<uint64_t> parse_cgroup_limit(const std::string& text, bool* ok);

// The directory of a cgroup `path` inside a hierarchy mounted as `mount`
// (whose `root` is the part of the hierarchy mounted there); nullopt when
// the cgroup lies outside what is mounted.
std::optional<std::string> cgroup_dir(const MountEntry& mount, const std::string& path);

struct CgroupLimit {
  bool hierarchy_found = false;   // this process is in such a hierarchy and it is mounted
  std::string dir;                // its cgroup directory (system path)
  std::optional<uint64_t> limit;  // smallest limit along the ancestors; nullopt = none
  std::string limit_dir;          // where the smallest limit was set
  bool limit_unreadable = false;  // that file held no byte count ("eight gigs"): taken as 0
  std::optional<uint64_t> usage;  // memory.current / memory.usage_in_bytes there, when readable
  // What is left under the limit (limit - usage, usage 0 when unreadable); nullopt without a limit.
  std::optional<uint64_t> room() const;
};

struct CgroupMemory {
  CgroupLimit v1;  // memory controller, memory.limit_in_bytes
  CgroupLimit v2;  // unified hierarchy, memory.max
  // The smaller of the two limits; nullopt when neither caps memory.
  std::optional<uint64_t> effective_limit() const;
  // The hierarchy whose limit that is (nullptr when none).
  const CgroupLimit* effective() const;
};

// Reads /proc/self/cgroup, /proc/self/mountinfo and the limit files under
// `root` ("" or "/" for the live system). Without a readable mountinfo the
// hierarchies are taken to be at their usual places (v2 at /sys/fs/cgroup,
// v1's memory controller at /sys/fs/cgroup/memory).
CgroupMemory read_cgroup_memory(const std::string& root);

}  // namespace k3
