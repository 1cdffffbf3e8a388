#include "serve/prompt_cache_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "common/error.h"
#include "state/state_file_summary.h"

namespace k3::serve {

namespace {

constexpr const char* kPrefix = "prompt-";
constexpr const char* kSuffix = ".k3state";
constexpr size_t kHashDigits = 32;

bool is_cache_name(const std::string& name) {
  const size_t prefix = std::strlen(kPrefix), suffix = std::strlen(kSuffix);
  if (name.size() != prefix + kHashDigits + suffix || name.compare(0, prefix, kPrefix) != 0 ||
      name.compare(prefix + kHashDigits, suffix, kSuffix) != 0)
    return false;
  return std::all_of(name.begin() + static_cast<ptrdiff_t>(prefix),
                     name.begin() + static_cast<ptrdiff_t>(prefix + kHashDigits),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

void skip(const std::string& path, const std::string& why) {
  std::fprintf(stderr, "k3-serve: prompt cache: ignoring %s: %s\n", path.c_str(), why.c_str());
}

int64_t mtime_ns(const struct stat& st) { return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec; }

// The entry at `path` when it is one of this model's states; nullopt (and a
// line saying why) otherwise.
std::optional<PromptCacheFile> indexed(const std::string& dir, const std::string& name, const ModelIdentity& model,
                                       int64_t* mtime) {
  const std::string path = dir + "/" + name;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;  // gone meanwhile
  if (!S_ISREG(st.st_mode)) {
    skip(path, "not a regular file");
    return std::nullopt;
  }
  if (st.st_uid != ::geteuid()) {
    skip(path, "owned by another user");
    return std::nullopt;
  }
  StateFileSummary s;
  try {
    s = read_state_summary(path);
  } catch (const Error& e) {
    skip(path, e.what());
    return std::nullopt;
  }
  if (!(s.model == model.fingerprint) || !(s.geometry == model.geometry)) {
    skip(path, "another model's state");
    return std::nullopt;
  }
  if (s.ids.empty() || path != prompt_cache_path(dir, model, s.ids)) {
    skip(path, "its name is not that of the ids it holds");
    return std::nullopt;
  }
  *mtime = mtime_ns(st);
  return PromptCacheFile{path, std::move(s.ids), s.file_bytes};
}

}  // namespace

void check_prompt_cache_dir(const std::string& dir, const std::string& label) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw Error(ExitCode::kUsage, label + ": cannot create the directory: " + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throw Error(ExitCode::kUsage, label + ": " + std::strerror(errno));
  if (S_ISLNK(st.st_mode))
    throw Error(ExitCode::kUsage, label + ": is a symbolic link; give the directory it points to, if it is yours");
  if (!S_ISDIR(st.st_mode)) throw Error(ExitCode::kUsage, label + ": not a directory");
  if (st.st_uid != ::geteuid())
    throw Error(ExitCode::kUsage, label + ": owned by another user (uid " + std::to_string(st.st_uid) +
                                      "); a prompt cache must be yours alone");
  if (st.st_mode & 022) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw Error(ExitCode::kUsage, label + ": writable by " + ((st.st_mode & 002) ? "others" : "its group") + " (mode " +
                                      mode + "); make it yours alone: chmod 700 " + dir);
  }
}

std::vector<PromptCacheFile> index_prompt_cache(const std::string& dir, const ModelIdentity& model) {
  std::vector<std::pair<int64_t, PromptCacheFile>> found;
  std::unique_ptr<DIR, decltype(&::closedir)> d(::opendir(dir.c_str()), &::closedir);
  if (!d) throw Error(ExitCode::kIo, dir + ": cannot list the prompt cache: " + std::strerror(errno));
  while (const dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    if (name.find(".tmp.") != std::string::npos) continue;  // a write under way (or a killed one's)
    if (!is_cache_name(name)) {
      skip(path, "not a prompt cache file");
      continue;
    }
    int64_t mtime = 0;
    if (auto f = indexed(dir, name, model, &mtime)) found.emplace_back(mtime, std::move(*f));
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<PromptCacheFile> out;
  for (auto& [t, f] : found) out.push_back(std::move(f));
  return out;
}

std::string prompt_cache_path(const std::string& dir, const ModelIdentity& model, const std::vector<int32_t>& ids) {
  const ModelFingerprint& m = model.fingerprint;
  const uint64_t key[] = {m.config_hash, m.index_hash, m.weights_hash, ids.size()};
  std::string bytes(reinterpret_cast<const char*>(key), sizeof key);
  bytes.append(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof ids[0]);
  const XXH128_hash_t v = XXH3_128bits(bytes.data(), bytes.size());
  char hex[kHashDigits + 1];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(v.high64),
                static_cast<unsigned long long>(v.low64));
  return dir + "/" + kPrefix + hex + kSuffix;
}

void touch_prompt_cache_file(const std::string& path) {
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);  // only the order is lost if it fails
}

}  // namespace k3::serve
