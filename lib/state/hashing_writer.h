// The state file's writer: bytes go to an atomic file (a temporary created
// exclusively, renamed on commit) and into the file's running XXH3, in
// sections of a tag, a payload size and the payload padded to 8 bytes; the
// digest closes the file. One concept, kept apart from the section layout
// (state_file.cpp) that uses it.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/atomic_file_writer.h"
#include "common/error.h"
#include "state/state_layout.h"

namespace k3 {

class HashingWriter {
 public:
  explicit HashingWriter(const std::string& path) : out_(path, OutputPolicy::kFileOrStream), hash_(XXH3_createState()) {
    if (!hash_) throw Error(ExitCode::kResource, path + ": out of memory");
    XXH3_64bits_reset(hash_.get());
  }
  void write(const void* p, size_t n) {
    if (n == 0) return;
    out_.write(p, n);
    XXH3_64bits_update(hash_.get(), p, n);
    written_ += n;
  }
  void u32(uint32_t v) { write(&v, 4); }
  void i32(int32_t v) { write(&v, 4); }
  void u64(uint64_t v) { write(&v, 8); }
  void f64(double v) { write(&v, 8); }
  void zeros(uint64_t n) {
    static const char kZero[4096] = {};
    while (n > 0) {
      size_t k = n < sizeof kZero ? static_cast<size_t>(n) : sizeof kZero;
      write(kZero, k);
      n -= k;
    }
  }
  void floats(const std::vector<float>& v, uint64_t expected) {
    if (v.empty()) return zeros(4 * expected);  // a layer that never ran: zero state
    write(v.data(), 4 * v.size());
  }
  void section(uint32_t t, uint64_t payload) {
    u32(t);
    u32(0);
    u64(payload);
    section_end_ = written_ + state_layout::pad8(payload);
  }
  void end_section() {
    if (written_ > section_end_) throw Error(ExitCode::kInternal, out_.path() + ": section overrun");
    zeros(section_end_ - written_);
  }
  void finish() {
    uint64_t h = XXH3_64bits_digest(hash_.get());
    out_.write(&h, 8);
    written_ += 8;
    out_.commit();
  }
  uint64_t written() const { return written_; }

 private:
  struct FreeState {
    void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
  };
  AtomicFileWriter out_;
  std::unique_ptr<XXH3_state_t, FreeState> hash_;
  uint64_t written_ = 0;
  uint64_t section_end_ = 0;
};

}  // namespace k3
