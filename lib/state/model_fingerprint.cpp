#include "state/model_fingerprint.h"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "common/file.h"
#include "state/shard_digest_cache.h"

namespace k3 {

namespace {

constexpr size_t kReadPiece = 8u << 20;  // large sequential reads; the page cache does the rest
constexpr unsigned kMaxHashThreads = 4;  // shards hashed at once (the disk is the limit beyond)

std::atomic<uint64_t> g_bytes_read{0};

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

uint64_t hash_file_text(const std::string& path) {
  std::string text = read_text_file(path);
  return XXH3_64bits(text.data(), text.size());
}

struct XxhState {
  XXH3_state_t* s = XXH3_createState();
  ~XxhState() { XXH3_freeState(s); }
};

}  // namespace

std::string ModelFingerprint::describe() const {
  return "config " + hex(config_hash) + ", index " + hex(index_hash) + ", weights " + hex(weights_hash);
}

std::string shard_content_digest(const std::string& path) {
  File f = File::open_read(path);
  XxhState st;
  if (!st.s) throw Error(ExitCode::kInternal, "cannot allocate a hash state");
  XXH3_128bits_reset(st.s);
  std::vector<char> buf(kReadPiece);
  const uint64_t size = f.size();
  for (uint64_t at = 0; at < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kReadPiece, size - at));
    f.pread_exact(buf.data(), n, at);
    XXH3_128bits_update(st.s, buf.data(), n);
    g_bytes_read += n;
    at += n;
  }
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(st.s));
  static const char* kDigits = "0123456789abcdef";
  std::string out(32, '0');
  for (size_t i = 0; i < 16; ++i) {
    out[2 * i] = kDigits[canon.digest[i] >> 4];
    out[2 * i + 1] = kDigits[canon.digest[i] & 15];
  }
  return out;
}

ModelFingerprint fingerprint_model(const Checkpoint& ckpt, const ShardDigests& known, ShardDigestCache* cache,
                                   const ProgressCallback& progress) {
  ModelFingerprint fp;
  fp.config_hash = hash_file_text(path_join(ckpt.dir(), "config.json"));
  std::string index = path_join(ckpt.dir(), "model.safetensors.index.json");
  if (file_exists(index)) fp.index_hash = hash_file_text(index);

  const std::vector<ShardInfo>& shards = ckpt.shards();
  std::vector<std::string> digests(shards.size());
  std::vector<std::optional<ShardFileKey>> keys(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    if (known) digests[i] = known(shards[i].path);
    if (digests[i].empty() && cache) {
      keys[i] = shard_file_key(shards[i].path);
      if (keys[i]) digests[i] = cache->find(*keys[i]);
    }
    if (!digests[i].empty()) keys[i].reset();  // nothing to remember
  }
  // The shards no record vouches for are read, several at once, while this
  // thread reports how far the read is (it can take minutes at K3 size).
  uint64_t to_read = 0;
  for (size_t i = 0; i < shards.size(); ++i)
    if (digests[i].empty()) to_read += shards[i].file_size;
  const uint64_t read_before = g_bytes_read;
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(shards.size());
  auto work = [&] {
    for (size_t i; (i = next++) < shards.size();) {
      if (!digests[i].empty()) continue;
      try {
        digests[i] = shard_content_digest(shards[i].path);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const unsigned threads = std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, kMaxHashThreads);
  std::vector<std::thread> pool;
  std::atomic<unsigned> running{0};
  for (unsigned t = 0; t < threads && t < shards.size(); ++t) {
    ++running;
    pool.emplace_back([&] {
      work();
      --running;
    });
  }
  if (progress && to_read > 0) {
    while (running > 0) {
      progress(kFingerprintStep, std::min(to_read, g_bytes_read - read_before), to_read);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    progress(kFingerprintStep, to_read, to_read);
  }
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  if (cache) {
    // A digest is remembered only for the file it was read from: one that
    // changed while it was read keeps no entry (its next use reads it again).
    bool added = false;
    for (size_t i = 0; i < shards.size(); ++i)
      if (keys[i] && shard_file_key(shards[i].path) == keys[i]) {
        cache->put(*keys[i], digests[i]);
        added = true;
      }
    if (added) cache->save();
  }

  std::string all;
  for (size_t i = 0; i < shards.size(); ++i)
    all += shards[i].file + '\0' + std::to_string(shards[i].file_size) + '\0' + digests[i] + '\n';
  fp.weights_hash = XXH3_64bits(all.data(), all.size());
  return fp;
}

uint64_t shard_digest_bytes_read() { return g_bytes_read; }

}  // namespace k3
