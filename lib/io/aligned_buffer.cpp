#include "io/aligned_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "common/error.h"

namespace k3 {

AlignedBuffer::AlignedBuffer(size_t bytes) {
  size_ = align_up(bytes);
  if (size_ == 0) return;
  void* p = nullptr;
  if (::posix_memalign(&p, kDirectAlign, size_) != 0 || !p)
    throw Error(ExitCode::kResource, "cannot allocate " + std::to_string(size_) + " bytes of aligned memory");
  std::memset(p, 0, size_);  // touch now: the memory plan counts these pages as resident
  data_ = static_cast<uint8_t*>(p);
}

AlignedBuffer::AlignedBuffer(size_t bytes, HugePages) {
  size_ = align_up(bytes, kHugePageBytes);
  if (size_ == 0) return;
  void* p = nullptr;
  if (::posix_memalign(&p, kHugePageBytes, size_) != 0 || !p)
    throw Error(ExitCode::kResource, "cannot allocate " + std::to_string(size_) + " bytes of aligned memory");
  // Before the first touch, so the pages are faulted in as huge ones; the
  // result is ignored: without THP (or with it set to "never") this is an
  // ordinary buffer and only slower.
  (void)::madvise(p, size_, MADV_HUGEPAGE);
  std::memset(p, 0, size_);
  data_ = static_cast<uint8_t*>(p);
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

void AlignedBuffer::discard(size_t offset, size_t bytes) {
  if (offset >= size_) return;
  const uint64_t begin = align_up(offset), end = align_down(std::min<uint64_t>(size_, offset + bytes));
  // A hint with no failure that matters: where it is refused the pages stay
  // resident, which only costs memory.
  if (begin < end) (void)::madvise(data_ + begin, end - begin, MADV_DONTNEED);
}

}  // namespace k3
