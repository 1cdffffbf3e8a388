// Decoding the blocks of a compressed trunk section (trunk/codec.h) into the
// section's decoded layout, as the engine and k3-pack --check use it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "trunk/codec.h"
#include "trunk/layout.h"

namespace k3 {

// Blocks [first, last) of a compressed section.
struct BlockRange {
  size_t first = 0, last = 0;
};

// The blocks whose decoded bytes overlap [begin, end) (absolute decoded offsets).
BlockRange blocks_covering(const TrunkSection& s, uint64_t begin, uint64_t end);

// The blocks holding tensor `t` whole; k3-pack cuts each tensor into blocks
// of its own, so they start at its first byte. Throws k3::Error (kBadModel)
// when they do not.
BlockRange tensor_blocks(const TrunkSection& s, const TrunkTensor& t);

// Decoded bytes [begin, end) of a section (rows of a matrix): the blocks
// covering them, decoded from `base`; the rows start `skip` bytes in, and
// `bytes` are decoded in all (at most one block more at each end).
struct DecodedRows {
  BlockRange blocks;
  uint64_t base = 0, skip = 0, bytes = 0;
};
DecodedRows decoded_rows(const TrunkSection& s, uint64_t begin, uint64_t end);

// Where the stored bytes of `r` lie in trunk.bin: [offset, offset + length).
struct StoredSpan {
  uint64_t offset = 0, length = 0;
};
StoredSpan stored_span(const TrunkSection& s, BlockRange r);

// Decodes the blocks of `r` from `stored` (`stored_len` bytes of trunk.bin
// from file offset `stored_base`) into `dst` (`dst_len` bytes, holding
// decoded bytes from decoded offset `dst_base`). Returns an empty string, or
// what is wrong naming the section and block (a damaged block is never
// written out as good bytes). A block whose stored or decoded bytes fall
// outside those spans is refused before a byte is written: nothing is ever
// written outside dst, whatever trunk.json says.
std::string decode_blocks(const TrunkSection& s, BlockRange r, const uint8_t* stored, uint64_t stored_base,
                          uint64_t stored_len, uint8_t* dst, uint64_t dst_base, uint64_t dst_len,
                          TrunkBlockDecoder& decoder);

// Checks the blocks `r` of raw section `s` against their hashes: their bytes
// are in `data` (`data_len` bytes holding decoded bytes from decoded offset
// `data_base`, which must hold each block whole). `verified` (one flag per
// block of s, or nullptr) skips blocks already checked and marks those that
// pass; any thread may call this at once on the same flags. Returns "" or
// the first damaged block, naming `file`, the section, the block and its
// bytes.
std::string check_raw_blocks(const TrunkSection& s, BlockRange r, const uint8_t* data, uint64_t data_base,
                             uint64_t data_len, std::atomic<bool>* verified, const std::string& file);

// Whether `verified` (as above) marks every block of `r`.
bool blocks_verified(BlockRange r, const std::atomic<bool>* verified);

// Zero-fills the bytes of dst (decoded bytes of `s` from s.offset, s.length
// of them) that no block covers: the padding between tensors.
void zero_section_gaps(const TrunkSection& s, uint8_t* dst);

}  // namespace k3
