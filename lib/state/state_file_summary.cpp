#include "state/state_file_summary.h"

#include <cstring>

#include "common/error.h"
#include "common/file.h"
#include "state/state_file.h"
#include "state/state_layout.h"

namespace k3 {

using namespace state_layout;

namespace {

// Reads the leading sections in order, each bounded by the file's size
// (less its checksum), so a forged length never reads past the file or
// allocates more than the file holds.
class PrefixReader {
 public:
  PrefixReader(const File& f, uint64_t end) : f_(f), end_(end) {}

  // Opens the next section, which must carry `tag`; returns its payload length.
  uint64_t open(uint32_t tag, const char* what) {
    if (pos_ > end_ || end_ - pos_ < kSectionHeaderBytes) bad(std::string("no ") + what + " section");
    const uint32_t got = field<uint32_t>(pos_);
    const uint64_t len = field<uint64_t>(pos_ + 8);
    if (got != tag) bad(std::string("expected the ") + what + " section");
    const uint64_t room = end_ - pos_ - kSectionHeaderBytes;
    if (len > room || pad8(len) > room) bad(std::string("the ") + what + " section runs past the end of the file");
    cur_ = pos_ + kSectionHeaderBytes;
    pos_ = cur_ + pad8(len);
    return len;
  }
  template <typename T>
  T next() {
    T v = field<T>(cur_);
    cur_ += sizeof v;
    return v;
  }
  void read(void* dst, uint64_t n) {
    if (n) f_.pread_exact(dst, static_cast<size_t>(n), cur_);
    cur_ += n;
  }
  [[noreturn]] void bad(const std::string& what) const {
    throw Error(ExitCode::kBadInput, f_.path() + ": malformed state file: " + what);
  }

 private:
  template <typename T>
  T field(uint64_t at) const {
    T v;
    f_.pread_exact(&v, sizeof v, at);
    return v;
  }
  const File& f_;
  uint64_t end_;
  uint64_t pos_ = kHeaderBytes, cur_ = 0;
};

void read_header(const File& f, uint64_t size, StateFileSummary& s) {
  const std::string& path = f.path();
  char h[kHeaderBytes];
  if (size < kHeaderBytes + kChecksumBytes)
    throw Error(ExitCode::kBadInput, path + ": not a k3 state file (too short)");
  f.pread_exact(h, kHeaderBytes, 0);
  uint32_t version, flags;
  uint64_t declared;
  std::memcpy(&version, h + 8, 4);
  std::memcpy(&flags, h + 12, 4);
  std::memcpy(&declared, h + 16, 8);
  if (std::memcmp(h, kMagic, 8) != 0) throw Error(ExitCode::kBadInput, path + ": not a k3 state file");
  if (version != kFormatVersion || (flags & ~kKnownFlags))
    throw Error(ExitCode::kBadInput, path + ": a state file of another format version");
  if (declared != size)
    throw Error(ExitCode::kBadInput, path + ": " + (size < declared ? "truncated" : "damaged") +
                                         " state file: " + std::to_string(size) + " bytes on disk, its header says " +
                                         std::to_string(declared));
  s.file_bytes = size;
}

void read_geometry(PrefixReader& r, StateGeometry& g) {
  const uint64_t len = r.open(kTagGeometry, "geometry");
  if (len < 32) r.bad("geometry section too short");
  const uint32_t layers = r.next<uint32_t>();
  for (uint32_t* v :
       {&g.vocab_size, &g.kda_heads, &g.kda_head_dim, &g.conv_kernel, &g.kv_lora_rank, &g.qk_rope_head_dim})
    *v = r.next<uint32_t>();
  r.next<uint32_t>();
  if (len != 32 + uint64_t{layers}) r.bad("geometry section of another length than its layers");
  g.layer_is_mla.resize(layers);
  r.read(g.layer_is_mla.data(), layers);
}

void append_ids(PrefixReader& r, uint32_t tag, const char* what, uint32_t vocab, std::vector<int32_t>& ids) {
  const uint64_t len = r.open(tag, what);
  if (len < 8) r.bad(std::string(what) + " section too short");
  const uint64_t n = r.next<uint64_t>();
  if (len != tokens_payload_bytes(n)) r.bad(std::string(what) + " section of another length than its ids");
  const size_t at = ids.size();
  ids.resize(at + static_cast<size_t>(n));
  r.read(ids.data() + at, 4 * n);
  for (size_t i = at; i < ids.size(); ++i)
    if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= vocab)
      r.bad(std::string(what) + ": an id outside the vocabulary");
}

}  // namespace

StateFileSummary read_state_summary(const std::string& path) {
  File f = [&] {
    try {
      return File::open_read(path);
    } catch (const Error& e) {
      throw Error(ExitCode::kBadInput, e.what());
    }
  }();
  StateFileSummary s;
  const uint64_t size = f.size();
  read_header(f, size, s);
  PrefixReader r(f, size - kChecksumBytes);
  if (r.open(kTagModel, "model fingerprint") != kModelPayloadBytes) r.bad("model fingerprint of another length");
  s.model.config_hash = r.next<uint64_t>();
  s.model.index_hash = r.next<uint64_t>();
  s.model.weights_hash = r.next<uint64_t>();
  read_geometry(r, s.geometry);
  append_ids(r, kTagTokens, "token history", s.geometry.vocab_size, s.ids);
  const size_t evaluated = s.ids.size();
  append_ids(r, kTagPending, "pending ids", s.geometry.vocab_size, s.ids);
  if (s.ids.size() - evaluated > kMaxPendingIds) r.bad("more pending ids than a saved state holds");
  return s;
}

}  // namespace k3
