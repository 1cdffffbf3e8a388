// Decoding the blocks of a compressed trunk section (trunk_codec.h) into the
// section's decoded layout, as the engine and k3-pack --check use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "checkpoint/trunk_codec.h"
#include "checkpoint/trunk_layout.h"

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

// Decodes the blocks of `r` from `stored` (trunk.bin's bytes from file
// offset `stored_base`) into `dst`, which holds decoded bytes from decoded
// offset `dst_base`. Returns an empty string, or what is wrong naming the
// section and block (a damaged block is never written out as good bytes).
std::string decode_blocks(const TrunkSection& s, BlockRange r, const uint8_t* stored, uint64_t stored_base,
                          uint8_t* dst, uint64_t dst_base, TrunkBlockDecoder& decoder);

// Zero-fills the bytes of dst (decoded bytes of `s` from s.offset, s.length
// of them) that no block covers: the padding between tensors.
void zero_section_gaps(const TrunkSection& s, uint8_t* dst);

}  // namespace k3
