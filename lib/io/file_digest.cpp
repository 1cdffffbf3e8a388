#include "io/file_digest.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/error.h"

namespace k3 {

struct FileDigest::Impl {
  EVP_MD_CTX* sha256 = nullptr;
  EVP_MD_CTX* sha1 = nullptr;  // git blob id, only when requested
  XXH3_state_t* xxh = nullptr;
  bool git = false;
};

namespace {
void check_ssl(int ok, const char* what) {
  if (ok != 1) throw Error(ExitCode::kInternal, std::string("OpenSSL ") + what + " failed");
}
}  // namespace

FileDigest::FileDigest(int64_t git_blob_size) : impl_(std::make_unique<Impl>()) {
  impl_->sha256 = EVP_MD_CTX_new();
  impl_->sha1 = EVP_MD_CTX_new();
  impl_->xxh = XXH3_createState();
  if (!impl_->sha256 || !impl_->sha1 || !impl_->xxh)
    throw Error(ExitCode::kInternal, "out of memory creating hash state");
  reset(git_blob_size);
}

FileDigest::~FileDigest() {
  EVP_MD_CTX_free(impl_->sha256);
  EVP_MD_CTX_free(impl_->sha1);
  XXH3_freeState(impl_->xxh);
}

void FileDigest::reset(int64_t git_blob_size) {
  bytes_ = 0;
  check_ssl(EVP_DigestInit_ex(impl_->sha256, EVP_sha256(), nullptr), "sha256 init");
  XXH3_128bits_reset(impl_->xxh);
  impl_->git = git_blob_size >= 0;
  if (impl_->git) {
    check_ssl(EVP_DigestInit_ex(impl_->sha1, EVP_sha1(), nullptr), "sha1 init");
    // git hashes "blob <decimal size>\0" followed by the content.
    std::string prefix = "blob " + std::to_string(git_blob_size);
    check_ssl(EVP_DigestUpdate(impl_->sha1, prefix.data(), prefix.size() + 1), "sha1 update");
  }
}

void FileDigest::update(const void* data, size_t n) {
  if (n == 0) return;
  check_ssl(EVP_DigestUpdate(impl_->sha256, data, n), "sha256 update");
  if (impl_->git) check_ssl(EVP_DigestUpdate(impl_->sha1, data, n), "sha1 update");
  XXH3_128bits_update(impl_->xxh, data, n);
  bytes_ += n;
}

DigestResult FileDigest::finish() {
  DigestResult r;
  r.bytes = bytes_;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  check_ssl(EVP_DigestFinal_ex(impl_->sha256, md, &len), "sha256 final");
  r.sha256 = to_hex(md, len);
  if (impl_->git) {
    check_ssl(EVP_DigestFinal_ex(impl_->sha1, md, &len), "sha1 final");
    r.git_sha1 = to_hex(md, len);
  }
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(impl_->xxh));
  r.xxh3_128 = to_hex(canon.digest, sizeof(canon.digest));
  return r;
}

std::string to_hex(const unsigned char* bytes, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[bytes[i] >> 4];
    s[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return s;
}

void digest_fd(int fd, const std::string& path, uint64_t limit, FileDigest& digest,
               const std::function<bool(uint64_t)>* on_bytes,
               const std::function<void(uint64_t, const void*, size_t)>* on_data) {
  // Large sequential reads; tell the kernel so readahead is generous, and
  // drop what we hashed so a 1.5 TB check does not evict everything else.
  constexpr size_t kBlock = 8u << 20;
  std::vector<unsigned char> buf(kBlock);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  uint64_t off = 0;
  while (off < limit) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(kBlock, limit - off));
    ssize_t r = ::pread(fd, buf.data(), want, static_cast<off_t>(off));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw Error(ExitCode::kIo, path + ": read failed at offset " + std::to_string(off) + ": " + std::strerror(errno));
    }
    if (r == 0) break;
    digest.update(buf.data(), static_cast<size_t>(r));
    if (on_data) (*on_data)(off, buf.data(), static_cast<size_t>(r));
    ::posix_fadvise(fd, static_cast<off_t>(off), r, POSIX_FADV_DONTNEED);
    off += static_cast<uint64_t>(r);
    if (on_bytes && !(*on_bytes)(static_cast<uint64_t>(r)))
      throw Error(ExitCode::kInterrupted, path + ": hashing interrupted");
  }
}

}  // namespace k3
