#include "state/shard_digest_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "common/error.h"
#include "common/file.h"

namespace k3 {

namespace {

constexpr const char* kHeader = "k3-shard-digests 1\n";
// Far above kMaxEntries lines (~90 bytes each): a larger file is not ours.
constexpr size_t kMaxFileBytes = 1u << 20;

int64_t ns(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec; }

bool is_digest(const std::string& s) {
  return s.size() == 32 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The bytes of the cache file at `path` when it is one save() could have
// written and this user alone can change: a regular file (never a link:
// O_NOFOLLOW), owned by us, not writable by group or others, not too large.
// "" otherwise.
std::string read_own_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 022) == 0 &&
      static_cast<uint64_t>(st.st_size) <= kMaxFileBytes) {
    try {
      text = read_all(fd, path, kMaxFileBytes);
    } catch (const Error&) {
      text.clear();
    }
  }
  ::close(fd);
  return text;
}

template <typename T>
bool parse_number(std::string_view s, T* out) {
  if (s.empty() || s.size() > 20 || (s[0] == '-' && std::is_unsigned_v<T>)) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// The entries of a cache file's text, or nothing when any part of it is not
// what save() writes (then none of it is trusted).
std::optional<std::vector<std::pair<ShardFileKey, std::string>>> parse(const std::string& text) {
  const size_t header = std::char_traits<char>::length(kHeader);
  if (text.compare(0, header, kHeader) != 0) return std::nullopt;
  const size_t end_line = text.rfind("end ");
  if (end_line == std::string::npos || end_line < header || text.size() != end_line + 4 + 16 + 1 ||
      text.back() != '\n' || text.compare(end_line + 4, 16, hex64(XXH3_64bits(text.data(), end_line))) != 0)
    return std::nullopt;
  std::vector<std::pair<ShardFileKey, std::string>> out;
  for (size_t at = header; at < end_line;) {
    const size_t nl = text.find('\n', at);
    const std::string_view line(text.data() + at, nl - at);
    at = nl + 1;
    std::string_view f[6];
    size_t n = 0, from = 0;
    for (size_t i = 0; i <= line.size() && n < 6; ++i)
      if (i == line.size() || line[i] == ' ') {
        f[n++] = line.substr(from, i - from);
        from = i + 1;
      }
    ShardFileKey k;
    if (n != 6 || from != line.size() + 1 || !parse_number(f[0], &k.dev) || !parse_number(f[1], &k.ino) ||
        !parse_number(f[2], &k.size) || !parse_number(f[3], &k.mtime_ns) || !parse_number(f[4], &k.ctime_ns) ||
        !is_digest(std::string(f[5])))
      return std::nullopt;
    out.emplace_back(k, std::string(f[5]));
  }
  return out;
}

// mkdir -p with mode 0700 for the directories it creates; false when `dir`
// is not a directory afterwards.
bool make_dirs(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  const size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(dir.substr(0, slash))) return false;
  return ::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST;
}

}  // namespace

std::optional<ShardFileKey> shard_file_key(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  ShardFileKey k;
  k.dev = static_cast<uint64_t>(st.st_dev);
  k.ino = static_cast<uint64_t>(st.st_ino);
  k.size = static_cast<uint64_t>(st.st_size);
  k.mtime_ns = ns(st.st_mtim);
  k.ctime_ns = ns(st.st_ctim);
  return k;
}

std::string default_shard_digest_cache_path() {
  // The XDG base directory rule: a relative $XDG_CACHE_HOME is ignored.
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return path_join(path_join(xdg, "k3"), "shard-digests");
  const char* home = std::getenv("HOME");
  if (home && home[0] == '/') return path_join(path_join(path_join(home, ".cache"), "k3"), "shard-digests");
  return "";
}

ShardDigestCache::ShardDigestCache(std::string path) : path_(std::move(path)) {
  if (path_.empty()) return;
  if (auto parsed = parse(read_own_file(path_)))
    for (auto& [k, d] : *parsed) entries_.push_back({k, std::move(d)});
}

std::string ShardDigestCache::find(const ShardFileKey& key) const {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
    if (it->key == key) return it->digest;
  return "";
}

void ShardDigestCache::put(const ShardFileKey& key, const std::string& digest) {
  if (!is_digest(digest)) return;
  // One entry per file (device and inode): the newest replaces the others.
  std::erase_if(entries_, [&](const Entry& e) { return e.key.dev == key.dev && e.key.ino == key.ino; });
  entries_.push_back({key, digest});
  dirty_ = true;
}

bool ShardDigestCache::save() {
  if (path_.empty() || !dirty_) return !path_.empty();
  // What another run saved since this one read the file is kept, ours winning.
  std::vector<Entry> merged;
  if (auto parsed = parse(read_own_file(path_)))
    for (auto& [k, d] : *parsed) merged.push_back({k, std::move(d)});
  for (const Entry& e : entries_) {
    std::erase_if(merged, [&](const Entry& m) { return m.key.dev == e.key.dev && m.key.ino == e.key.ino; });
    merged.push_back(e);
  }
  if (merged.size() > kMaxEntries) merged.erase(merged.begin(), merged.end() - kMaxEntries);
  std::string text = kHeader;
  for (const Entry& e : merged)
    text += std::to_string(e.key.dev) + ' ' + std::to_string(e.key.ino) + ' ' + std::to_string(e.key.size) + ' ' +
            std::to_string(e.key.mtime_ns) + ' ' + std::to_string(e.key.ctime_ns) + ' ' + e.digest + '\n';
  text += "end " + hex64(XXH3_64bits(text.data(), text.size())) + '\n';
  const size_t slash = path_.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(path_.substr(0, slash))) return false;
  try {
    write_file_atomic(path_, text.data(), text.size());  // refuses a link or non-file at path_
  } catch (const Error&) {
    return false;  // a cache that cannot be written only costs speed
  }
  entries_ = std::move(merged);
  dirty_ = false;
  return true;
}

}  // namespace k3
