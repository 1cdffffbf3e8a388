// Whole-shard digests remembered between runs, so the model fingerprint of
// state files (model_fingerprint.h) does not read an unchanged checkpoint
// again on every --state-in/--state-out (at K3 size, minutes from NVMe).
//
// A digest is remembered under the identity of the file it was computed
// from: device, inode, size, modification time and status-change time (ns).
// Any write, truncate, touch, chmod, rename or replacement of the shard
// changes one of them (the kernel sets the status-change time; no user call
// can set it back), so the remembered digest is used only for the very file
// that was read, and anything else is read again.
//
// The file lives at $XDG_CACHE_HOME/k3/shard-digests (an absolute
// $XDG_CACHE_HOME), else ~/.cache/k3/shard-digests. It is a cache: a place
// that cannot be created or written only costs speed, never an error, and a
// file that is not exactly what save() writes (a link, a device, another
// owner's or a group/world-writable file, too large, a bad line, a checksum
// that does not match) is ignored whole, so every shard is read again. It is
// written atomically (a temporary created with O_EXCL|O_NOFOLLOW in the same
// directory, fsync, rename) and never through a link.
//
// Format (text): "k3-shard-digests 1", then one line per file
// "DEV INO SIZE MTIME_NS CTIME_NS DIGEST" (decimal, DIGEST 32 lowercase hex
// digits: the XXH3-128 of the whole file), then "end XXXXXXXXXXXXXXXX", the
// XXH3-64 of every byte before that line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace k3 {

struct ShardFileKey {
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const ShardFileKey&) const = default;
};

// The key of the regular file at `path` (following links, as a read does),
// or nothing when it cannot be stat'ed or is not a regular file.
std::optional<ShardFileKey> shard_file_key(const std::string& path);

// Where the cache lives by default: $XDG_CACHE_HOME/k3/shard-digests, else
// $HOME/.cache/k3/shard-digests; "" when neither variable gives an absolute path.
std::string default_shard_digest_cache_path();

class ShardDigestCache {
 public:
  // Most entries kept (a K3 checkpoint has 96 shards); the oldest go first.
  static constexpr size_t kMaxEntries = 4096;

  // Reads the cache at `path` ("" : no cache, nothing is read or written).
  explicit ShardDigestCache(std::string path);

  // The digest remembered for exactly this file, or "".
  std::string find(const ShardFileKey& key) const;
  // Remembers `digest` (32 lowercase hex digits) for `key`.
  void put(const ShardFileKey& key, const std::string& digest);
  // Writes the cache if put() added anything, merged with what another run
  // saved meanwhile. False (and nothing changed on disk) when it cannot.
  bool save();

  const std::string& path() const { return path_; }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    ShardFileKey key;
    std::string digest;
  };
  std::string path_;
  std::vector<Entry> entries_;  // oldest first
  bool dirty_ = false;
};

}  // namespace k3
