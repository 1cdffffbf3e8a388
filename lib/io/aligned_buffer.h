// Heap memory aligned for O_DIRECT (4096 bytes: the largest logical block
// size of common NVMe and the page size), zero-filled on allocation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3 {

constexpr uint64_t kDirectAlign = 4096;

inline uint64_t align_down(uint64_t x, uint64_t a = kDirectAlign) { return x - x % a; }
inline uint64_t align_up(uint64_t x, uint64_t a = kDirectAlign) { return (x + a - 1) / a * a; }

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes);  // rounded up to kDirectAlign; throws kResource when refused
  AlignedBuffer(AlignedBuffer&& o) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace k3
