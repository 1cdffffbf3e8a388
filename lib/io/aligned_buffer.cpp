#include "io/aligned_buffer.h"

#include <sys/mman.h>

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

}  // namespace k3
