#include "platform/cgroup_memory.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "platform/system_file.h"

namespace k3 {

namespace {
bool has_option(const std::string& csv, const std::string& opt) {
  std::istringstream in(csv);
  std::string o;
  while (std::getline(in, o, ','))
    if (o == opt) return true;
  return false;
}

// Walks from `dir` up to `stop` (the mount point), reading `file` at each
// level; the smallest limit wins, and the usage is read where it was set.
CgroupLimit walk_limits(const std::string& root, const std::string& dir, const std::string& stop,
                        const std::string& file, const std::string& usage_file) {
  CgroupLimit r;
  r.hierarchy_found = true;
  r.dir = dir;
  std::string d = dir;
  while (true) {
    if (auto text = read_system_file(root, d + "/" + file)) {
      bool ok = true;
      auto v = parse_cgroup_limit(*text, &ok);
      // A limit file that is not a byte count is taken as a limit of 0, not
      // as no limit: planning as if uncapped could run into the OOM killer.
      if (!ok) v = 0;
      if (v && (!r.limit || *v < *r.limit)) {
        r.limit = v;
        r.limit_dir = d;
        r.limit_unreadable = !ok;
      }
    }
    if (d == stop || d.size() <= stop.size()) break;
    size_t slash = d.rfind('/');
    if (slash == std::string::npos || slash < stop.size()) break;
    d = d.substr(0, slash);
    if (d.size() < stop.size()) d = stop;
  }
  if (r.limit)
    if (auto text = read_system_file(root, r.limit_dir + "/" + usage_file)) {
      bool ok = true;
      if (auto u = parse_cgroup_limit(*text, &ok); ok && u) r.usage = u;
    }
  return r;
}
}  // namespace

std::vector<CgroupMembership> parse_proc_cgroup(const std::string& text) {
  std::vector<CgroupMembership> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find(':');
    if (a == std::string::npos) continue;
    size_t b = line.find(':', a + 1);
    if (b == std::string::npos) continue;
    CgroupMembership m;
    const std::string id = line.substr(0, a);
    auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), m.hierarchy_id);
    if (ec != std::errc() || p != id.data() + id.size()) continue;
    std::istringstream ctl(line.substr(a + 1, b - a - 1));
    std::string c;
    while (std::getline(ctl, c, ','))
      if (!c.empty()) m.controllers.push_back(c);
    m.path = line.substr(b + 1);
    while (!m.path.empty() && (m.path.back() == '\r' || m.path.back() == ' ')) m.path.pop_back();
    if (m.path.empty() || m.path[0] != '/') continue;
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<uint64_t> parse_cgroup_limit(const std::string& text, bool* ok) {
  std::string s = first_line(text);
  size_t b = s.find_first_not_of(" \t");
  s = b == std::string::npos ? "" : s.substr(b);
  if (s == "max") return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
    *ok = false;
    return std::nullopt;
  }
  if (v >= (uint64_t{1} << 62)) return std::nullopt;
  return v;
}

std::optional<std::string> cgroup_dir(const MountEntry& mount, const std::string& path) {
  std::string rel;
  if (mount.root == "/") {
    rel = path;
  } else if (path == mount.root) {
    rel = "/";
  } else if (path.compare(0, mount.root.size(), mount.root) == 0 && path.size() > mount.root.size() &&
             path[mount.root.size()] == '/') {
    rel = path.substr(mount.root.size());
  } else {
    return std::nullopt;
  }
  std::string dir = mount.mount_point;
  if (rel != "/") dir += rel;
  return dir;
}

std::optional<uint64_t> CgroupMemory::effective_limit() const {
  std::optional<uint64_t> r = v1.limit;
  if (v2.limit && (!r || *v2.limit < *r)) r = v2.limit;
  return r;
}

std::optional<uint64_t> CgroupLimit::room() const {
  if (!limit) return std::nullopt;
  const uint64_t used = usage.value_or(0);
  return *limit > used ? *limit - used : 0;
}

const CgroupLimit* CgroupMemory::effective() const {
  if (v1.limit && (!v2.limit || *v1.limit <= *v2.limit)) return &v1;
  if (v2.limit) return &v2;
  return nullptr;
}

CgroupMemory read_cgroup_memory(const std::string& root) {
  CgroupMemory out;
  auto cg_text = read_system_file(root, "/proc/self/cgroup");
  if (!cg_text) return out;
  auto memberships = parse_proc_cgroup(*cg_text);
  std::vector<MountEntry> mounts;
  if (auto mi_text = read_system_file(root, "/proc/self/mountinfo")) {
    mounts = parse_mountinfo(*mi_text);
  } else {
    MountEntry v2, v1;
    v2.root = v1.root = "/";
    v2.fs_type = "cgroup2";
    v2.mount_point = "/sys/fs/cgroup";
    v1.fs_type = "cgroup";
    v1.super_options = "rw,memory";
    v1.mount_point = "/sys/fs/cgroup/memory";
    mounts = {v2, v1};
  }

  for (const CgroupMembership& m : memberships) {
    const bool v1_memory = std::find(m.controllers.begin(), m.controllers.end(), "memory") != m.controllers.end();
    const bool v2 = m.hierarchy_id == 0 && m.controllers.empty();
    if (!v1_memory && !v2) continue;
    for (const MountEntry& e : mounts) {
      const bool match =
          v1_memory ? (e.fs_type == "cgroup" && has_option(e.super_options, "memory")) : e.fs_type == "cgroup2";
      if (!match) continue;
      auto dir = cgroup_dir(e, m.path);
      if (!dir) continue;  // e.g. a second mount of another subtree
      if (v1_memory) out.v1 = walk_limits(root, *dir, e.mount_point, "memory.limit_in_bytes", "memory.usage_in_bytes");
      else out.v2 = walk_limits(root, *dir, e.mount_point, "memory.max", "memory.current");
      break;
    }
  }
  return out;
}

}  // namespace k3
