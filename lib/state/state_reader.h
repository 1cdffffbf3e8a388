// Reading a state file's sections (state-format.md), shared by the whole
// reader (state_file.cpp: read_state_file, which also checks the checksum
// and reads the large sections) and the summary reader
// (state_file_summary.cpp: the leading sections only, for an index). Every
// length is bounded by the file's size before anything is allocated or
// read, and every refusal names the file. Private to lib/state.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/file.h"
#include "state/model_fingerprint.h"
#include "state/state_geometry.h"
#include "state/state_layout.h"

namespace k3::state_reader {

using namespace state_layout;

inline std::string tag_name(uint32_t t) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    char c = static_cast<char>((t >> (8 * i)) & 0xff);
    s += (c >= 32 && c < 127) ? c : '?';
  }
  return s;
}

[[noreturn]] inline void refuse(ExitCode code, const std::string& path, const std::string& what) {
  throw Error(code, path + ": " + what);
}

class SectionReader {
 public:
  SectionReader(const File& f, uint64_t end) : f_(f), end_(end) {}

  // Opens the next section, which must carry tag `t`; returns its payload length.
  uint64_t open(uint32_t t, const char* what) {
    if (pos_ + kSectionHeaderBytes > end_) malformed(std::string("missing ") + what + " section");
    uint32_t got = u32_at(pos_);
    uint64_t len = u64_at(pos_ + 8);
    if (got != t)
      malformed(std::string("expected the ") + what + " section (" + tag_name(t) + ") at offset " +
                std::to_string(pos_) + ", found '" + tag_name(got) + "'");
    if (len > end_ - pos_ - kSectionHeaderBytes || pad8(len) > end_ - pos_ - kSectionHeaderBytes)
      malformed(std::string(what) + " section runs past the end of the file");
    payload_ = pos_ + kSectionHeaderBytes;
    cur_ = payload_;
    len_ = len;
    pos_ = payload_ + pad8(len);
    ++sections_;
    return len;
  }
  void expect_length(uint64_t want, const char* what) {
    if (len_ != want)
      malformed(std::string(what) + " section has " + std::to_string(len_) + " bytes, expected " +
                std::to_string(want));
  }
  void read(void* dst, uint64_t n) {
    if (cur_ + n > payload_ + len_) malformed("a section is shorter than its contents");
    if (n) f_.pread_exact(dst, static_cast<size_t>(n), cur_);
    cur_ += n;
  }
  // The next fixed-size field of the open section (little-endian, as written).
  template <typename T>
  T next() {
    T v;
    read(&v, sizeof v);
    return v;
  }
  uint32_t u32() { return next<uint32_t>(); }
  int32_t i32() { return next<int32_t>(); }
  uint64_t u64() { return next<uint64_t>(); }
  double f64() { return next<double>(); }
  void floats(std::vector<float>& v, uint64_t n) {
    v.resize(static_cast<size_t>(n));
    read(v.data(), 4 * n);
  }
  uint64_t pos() const { return pos_; }
  uint32_t sections() const { return sections_; }

  [[noreturn]] void malformed(const std::string& what) const {
    refuse(ExitCode::kBadInput, f_.path(), "malformed state file: " + what);
  }

 private:
  template <typename T>
  T field_at(uint64_t at) const {
    T v;
    f_.pread_exact(&v, sizeof v, at);
    return v;
  }
  uint32_t u32_at(uint64_t at) const { return field_at<uint32_t>(at); }
  uint64_t u64_at(uint64_t at) const { return field_at<uint64_t>(at); }

  const File& f_;
  uint64_t end_;
  uint64_t pos_ = kHeaderBytes, payload_ = 0, cur_ = 0, len_ = 0;
  uint32_t sections_ = 0;
};

// The fixed header, checked before anything else is read: the magic, the
// format version, flags this k3 knows and the size the file should have.
struct StateHeader {
  char bytes[kHeaderBytes] = {};
  uint32_t flags = 0;
  uint32_t sections() const {
    uint32_t n;
    std::memcpy(&n, bytes + 24, 4);
    return n;
  }
};

inline StateHeader read_header(const File& f, uint64_t size, const std::string& path) {
  StateHeader h;
  char* header = h.bytes;
  if (size < 8) refuse(ExitCode::kBadInput, path, "not a k3 state file (only " + std::to_string(size) + " bytes)");
  f.pread_exact(header, 8, 0);
  if (std::memcmp(header, kMagic, 8) != 0)
    refuse(ExitCode::kBadInput, path, "not a k3 state file (its first bytes are not the state file magic)");
  if (size < kHeaderBytes + kChecksumBytes)
    refuse(ExitCode::kBadInput, path,
           "truncated state file: " + std::to_string(size) + " bytes, too short for a header");
  f.pread_exact(header, kHeaderBytes, 0);
  uint32_t version, flags;
  uint64_t declared;
  std::memcpy(&version, header + 8, 4);
  std::memcpy(&flags, header + 12, 4);
  std::memcpy(&declared, header + 16, 8);
  if (version != kFormatVersion)
    refuse(ExitCode::kBadInput, path,
           "state file format version " + std::to_string(version) + ", but this k3 reads version " +
               std::to_string(kFormatVersion) + "; save the state again with this k3");
  if (flags & ~kKnownFlags)
    refuse(ExitCode::kBadInput, path,
           "state file uses unknown flags " + std::to_string(flags) + " (written by a newer k3?)");
  if (declared != size)
    refuse(ExitCode::kBadInput, path,
           (size < declared ? "truncated state file: " : "damaged state file: ") + std::to_string(size) +
               " bytes on disk, its header says " + std::to_string(declared));
  h.flags = flags;
  return h;
}

inline File open_state(const std::string& path) {
  if (!file_exists(path)) refuse(ExitCode::kBadInput, path, "state file not found");
  try {
    return File::open_read(path);
  } catch (const Error& e) {
    throw Error(ExitCode::kBadInput, e.what());
  }
}

// The geometry section: the model's shape the state was saved for.
inline StateGeometry read_geometry(SectionReader& r) {
  uint64_t glen = r.open(kTagGeometry, "geometry");
  if (glen < 32) r.malformed("geometry section too short");
  StateGeometry g;
  uint32_t layers = r.u32();
  g.vocab_size = r.u32();
  g.kda_heads = r.u32();
  g.kda_head_dim = r.u32();
  g.conv_kernel = r.u32();
  g.kv_lora_rank = r.u32();
  g.qk_rope_head_dim = r.u32();
  r.u32();
  r.expect_length(32 + uint64_t{layers}, "geometry");
  g.layer_is_mla.resize(layers);
  r.read(g.layer_is_mla.data(), layers);
  return g;
}

inline std::vector<int32_t> read_ids(SectionReader& r, uint32_t t, const char* what, uint32_t vocab) {
  uint64_t len = r.open(t, what);
  if (len < 8) r.malformed(std::string(what) + " section too short");
  uint64_t n = r.u64();
  r.expect_length(tokens_payload_bytes(n), what);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  r.read(ids.data(), 4 * n);
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= vocab)
      r.malformed(std::string(what) + " id " + std::to_string(ids[i]) + " at index " + std::to_string(i) +
                  " is outside the vocabulary");
  return ids;
}

// The model fingerprint section: the weights the state was saved for.
inline ModelFingerprint read_model(SectionReader& r) {
  r.open(kTagModel, "model fingerprint");
  r.expect_length(kModelPayloadBytes, "model fingerprint");
  ModelFingerprint m;
  m.config_hash = r.u64();
  m.index_hash = r.u64();
  m.weights_hash = r.u64();
  return m;
}

}  // namespace k3::state_reader
