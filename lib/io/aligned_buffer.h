// Heap memory aligned for O_DIRECT (4096 bytes: the largest logical block
// size of common NVMe and the page size), zero-filled on allocation.
// A buffer that is read into again and again and computed on (the expert
// cache's arena) can ask for transparent huge pages: an O_DIRECT read then
// pins one 2 MiB page instead of hundreds of 4 kB ones, and the compute
// walks fewer page-table entries (docs/memory.md has the figures).
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3 {

constexpr uint64_t kDirectAlign = 4096;
constexpr uint64_t kHugePageBytes = uint64_t{2} << 20;  // x86-64's and arm64's (4 kB granule) PMD page

inline uint64_t align_down(uint64_t x, uint64_t a = kDirectAlign) { return x - x % a; }
inline uint64_t align_up(uint64_t x, uint64_t a = kDirectAlign) { return (x + a - 1) / a * a; }

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes);  // rounded up to kDirectAlign; throws kResource when refused
  // Huge pages asked for: aligned and rounded up to kHugePageBytes, and
  // madvise(MADV_HUGEPAGE) before the pages are touched. A hint: where the
  // kernel has no transparent huge pages the buffer is an ordinary one.
  struct HugePages {};
  AlignedBuffer(size_t bytes, HugePages);
  AlignedBuffer(AlignedBuffer&& o) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Gives the whole pages of [offset, offset + bytes) back to the system
  // (madvise MADV_DONTNEED): the resident memory drops now, and they read as
  // zeros when touched again. For memory lent for a while (the expert
  // cache's slots beyond the chunk's own during a prefill's chunk).
  void discard(size_t offset, size_t bytes);

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace k3
