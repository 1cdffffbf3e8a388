// Streaming digests of a file's bytes: sha256 (what the Hugging Face hub
// publishes for LFS files), xxh3-128 (fast, recorded in the local manifest so
// a re-check does not depend on the hub) and the git blob sha1 (the hub's id
// for small non-LFS files such as config.json).
//
// All three are fed in one pass so a 16 GB shard is read once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace k3 {

struct DigestResult {
  std::string sha256;    // 64 lowercase hex digits
  std::string xxh3_128;  // 32 lowercase hex digits, canonical (big-endian) form as xxhsum -H2 prints
  std::string git_sha1;  // 40 hex digits, or empty when the git hash was not requested
  uint64_t bytes = 0;
};

class FileDigest {
 public:
  // git_blob_size >= 0 also computes the git blob sha1, which needs the size
  // up front ("blob <size>\0" prefixes the content).
  explicit FileDigest(int64_t git_blob_size = -1);
  ~FileDigest();
  FileDigest(const FileDigest&) = delete;
  FileDigest& operator=(const FileDigest&) = delete;

  void update(const void* data, size_t n);
  // Finishes the digests; the object must be reset() before further use.
  DigestResult finish();
  void reset(int64_t git_blob_size = -1);
  uint64_t bytes() const { return bytes_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint64_t bytes_ = 0;
};

// Hashes [0, limit) of an open file descriptor (limit = UINT64_MAX: to the
// end) into `digest`, calling on_bytes(n) after each block (progress, stop
// checks: return false to abort, which throws k3::Error(kInterrupted)).
// Throws k3::Error(kIo) naming `path` on a read failure. on_data, when
// given, also sees every block read (offset, bytes), for checks that ride on
// the same pass.
void digest_fd(int fd, const std::string& path, uint64_t limit, FileDigest& digest,
               const std::function<bool(uint64_t)>* on_bytes = nullptr,
               const std::function<void(uint64_t, const void*, size_t)>* on_data = nullptr);

std::string to_hex(const unsigned char* bytes, size_t n);

}  // namespace k3
