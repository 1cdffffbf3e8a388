#include "platform/mountinfo.h"

#include <charconv>
#include <sstream>

namespace k3 {

namespace {
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
        s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

template <typename T>
bool to_num(const std::string& s, T* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

bool path_has_prefix(const std::string& path, const std::string& prefix) {
  if (prefix == "/") return !path.empty() && path[0] == '/';
  if (path.compare(0, prefix.size(), prefix) != 0) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}
}  // namespace

std::vector<MountEntry> parse_mountinfo(const std::string& text) {
  std::vector<MountEntry> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    std::string x;
    while (words >> x) w.push_back(x);
    // id parent maj:min root mount_point options [optional...] - type source super
    size_t dash = 0;
    for (size_t i = 6; i < w.size(); ++i)
      if (w[i] == "-") {
        dash = i;
        break;
      }
    if (dash == 0 || w.size() < dash + 3) continue;
    MountEntry e;
    size_t colon = w[2].find(':');
    if (colon == std::string::npos) continue;
    if (!to_num(w[0], &e.id) || !to_num(w[1], &e.parent_id) || !to_num(w[2].substr(0, colon), &e.major) ||
        !to_num(w[2].substr(colon + 1), &e.minor))
      continue;
    e.root = unescape(w[3]);
    e.mount_point = unescape(w[4]);
    e.mount_options = w[5];
    e.fs_type = w[dash + 1];
    e.source = unescape(w[dash + 2]);
    if (dash + 3 < w.size()) e.super_options = w[dash + 3];
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<MountEntry> find_mount_for_path(const std::vector<MountEntry>& mounts, const std::string& path,
                                              std::optional<std::pair<uint32_t, uint32_t>> dev) {
  const MountEntry* best = nullptr;
  bool best_dev = false;
  for (const MountEntry& m : mounts) {
    if (!path_has_prefix(path, m.mount_point)) continue;
    const bool dev_match = dev && m.major == dev->first && m.minor == dev->second;
    if (best) {
      if (best_dev && !dev_match) continue;
      if (dev_match == best_dev && m.mount_point.size() < best->mount_point.size()) continue;
    }
    best = &m;  // later entries with an equal mount point cover earlier ones
    best_dev = dev_match;
  }
  if (!best) return std::nullopt;
  return *best;
}

bool is_network_or_fuse_fs(const std::string& t) {
  static const char* kNetwork[] = {"nfs",    "nfs4", "cifs", "smb3",   "smbfs", "9p",    "ceph",    "glusterfs",
                                   "lustre", "afs",  "gpfs", "beegfs", "sshfs", "davfs", "virtiofs"};
  if (t == "fuse" || t == "fuseblk" || t.rfind("fuse.", 0) == 0) return true;
  for (const char* n : kNetwork)
    if (t == n) return true;
  return false;
}

}  // namespace k3
