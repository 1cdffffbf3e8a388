// The draft's matrices streamed from model.safetensors on small presets
// (docs/dspark.md, "Memory"): a matrix used only through lin() is handed to
// it as consecutive blocks of whole rows, each read into one bounded buffer
// shared by all the draft's matrices just before it is multiplied. A draft
// pass (and each fusion of committed positions) reads those matrices again;
// the results are those of the resident matrices (a product row depends on
// its own weight row alone, model/weights.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/file.h"
#include "model/weights.h"

namespace k3 {

// The file, the one buffer and the bytes read through it.
class DraftStreamFile {
 public:
  // Throws Error(kIo) when `path` cannot be opened.
  DraftStreamFile(const std::string& path, uint64_t block_bytes);
  uint64_t block_bytes() const { return block_bytes_; }
  uint64_t bytes_read() const { return bytes_read_.load(); }
  // Reads `n` bytes at `offset` into the buffer (n <= block_bytes()).
  const uint16_t* read(uint64_t offset, uint64_t n);

 private:
  File file_;
  uint64_t block_bytes_;
  std::vector<uint16_t> buffer_;
  std::atomic<uint64_t> bytes_read_{0};
};

class DraftRowStream : public MatrixRows {
 public:
  // The BF16 matrix [rows, cols] at `offset` of the stream's file.
  DraftRowStream(std::shared_ptr<DraftStreamFile> file, uint64_t offset, int64_t rows, int64_t cols)
      : file_(std::move(file)), offset_(offset), rows_(rows), cols_(cols) {}
  // Blocks of as many whole rows as the buffer holds (at least one).
  void for_each_block(const Block& on_block) const override;

 private:
  std::shared_ptr<DraftStreamFile> file_;
  uint64_t offset_;
  int64_t rows_, cols_;
};

}  // namespace k3
