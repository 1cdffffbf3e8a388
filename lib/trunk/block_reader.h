// Reads blocks of a compressed trunk section (k3-pack --compress) and
// decodes them into their place in a decoded buffer, overlapped with the
// reads: the stored bytes arrive in pieces of a few MB in a small staging
// area, and each piece is decoded on the I/O thread that read it as soon as
// it lands, while the next pieces are read. Several pieces (and several
// units) decode at once on different I/O threads, so decoding spreads over
// the cores the compute thread is not using. Each block's xxh3 is checked
// (trunk/codec.h): a damaged block fails the read, never yields weights.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/aligned_buffer.h"
#include "io/direct_file.h"
#include "io/read_engine.h"
#include "trunk/blocks.h"

namespace k3 {

class TrunkBlockReader {
 public:
  // Stored bytes per piece (at least one block's), and pieces in flight per read.
  static constexpr uint64_t kPieceBytes = 8u << 20;
  static constexpr int kPiecesInFlight = 4;
  // Staging one read needs: kPiecesInFlight pieces, each with room for its
  // aligned ends.
  static constexpr uint64_t staging_bytes(uint64_t piece_bytes = kPieceBytes) {
    return kPiecesInFlight *
           ((piece_bytes < 2 * kTrunkBlockBytes ? 2 * kTrunkBlockBytes : piece_bytes) + 2 * kDirectAlign);
  }

  // The piece size for streamed units of at most `largest_stored` bytes:
  // kPieceBytes, or less when no unit is that large (so small models do
  // not hold staging they never fill).
  static constexpr uint64_t piece_bytes_for(uint64_t largest_stored) {
    return largest_stored < kPieceBytes
               ? (largest_stored < 2 * kTrunkBlockBytes ? 2 * kTrunkBlockBytes : largest_stored)
               : kPieceBytes;
  }

  TrunkBlockReader(ReadEngine& io, const DirectFile& file, uint64_t piece_bytes = kPieceBytes)
      : io_(io), file_(file), piece_bytes_(piece_bytes < 2 * kTrunkBlockBytes ? 2 * kTrunkBlockBytes : piece_bytes) {}

  // Reads blocks `r` of section `s` into `dst` (`dst_len` bytes: decoded
  // bytes from decoded offset `dst_base`; a block outside them fails the
  // read, nothing is written past dst_len) through `staging` (staging_bytes(), untouched by anyone
  // else until done). `done` runs once, on an I/O thread, after the last
  // block was decoded, with an empty string or the first failure. Returns
  // the stored bytes it reads.
  uint64_t submit(const TrunkSection& s, BlockRange r, uint8_t* dst, uint64_t dst_base, uint64_t dst_len,
                  AlignedBuffer& staging, ReadEngine::Done done, bool urgent);

  // Several block ranges of one section, each decoded to its own place
  // (the tensors of a streamed layer's held part), through one staging area
  // and one `done`.
  struct Target {
    BlockRange blocks;
    uint8_t* dst = nullptr;
    uint64_t dst_base = 0;
    uint64_t dst_len = 0;  // bytes at dst
  };
  uint64_t submit(const TrunkSection& s, const std::vector<Target>& targets, AlignedBuffer& staging,
                  ReadEngine::Done done, bool urgent);

  // The same, waiting; throws k3::Error (kIo for a read, kBadModel for a
  // damaged block).
  uint64_t read_now(const TrunkSection& s, BlockRange r, uint8_t* dst, uint64_t dst_base, uint64_t dst_len,
                    AlignedBuffer& staging);

  uint64_t piece_bytes() const { return piece_bytes_; }
  // Thread CPU seconds spent decoding so far (all threads).
  double decode_seconds() const;

 private:
  ReadEngine& io_;
  const DirectFile& file_;
  uint64_t piece_bytes_;
  // Shared with completions that may outlive a call.
  std::shared_ptr<std::atomic<uint64_t>> decode_ns_ = std::make_shared<std::atomic<uint64_t>>(0);
};

}  // namespace k3
