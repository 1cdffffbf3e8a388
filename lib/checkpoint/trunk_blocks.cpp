#include "checkpoint/trunk_blocks.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"

namespace k3 {

BlockRange blocks_covering(const TrunkSection& s, uint64_t begin, uint64_t end) {
  // Blocks are in ascending decoded order.
  auto after_begin = std::partition_point(s.blocks.begin(), s.blocks.end(),
                                          [&](const TrunkBlock& b) { return b.offset + b.size <= begin; });
  auto at_end = std::partition_point(after_begin, s.blocks.end(), [&](const TrunkBlock& b) { return b.offset < end; });
  return BlockRange{static_cast<size_t>(after_begin - s.blocks.begin()), static_cast<size_t>(at_end - s.blocks.begin())};
}

BlockRange tensor_blocks(const TrunkSection& s, const TrunkTensor& t) {
  const BlockRange r = blocks_covering(s, t.offset, t.offset + t.nbytes);
  if (r.first == r.last || s.blocks[r.first].offset != t.offset)
    throw Error(ExitCode::kBadModel, "trunk section " + s.name + " has no blocks starting at '" + t.name +
                                         "' (re-run k3-pack --compress)");
  return r;
}

DecodedRows decoded_rows(const TrunkSection& s, uint64_t begin, uint64_t end) {
  DecodedRows d;
  d.blocks = blocks_covering(s, begin, end);
  if (d.blocks.first == d.blocks.last) {
    d.base = begin;
    return d;
  }
  const TrunkBlock& first = s.blocks[d.blocks.first];
  const TrunkBlock& last = s.blocks[d.blocks.last - 1];
  d.base = first.offset;
  d.skip = begin - first.offset;
  d.bytes = last.offset + last.size - first.offset;
  return d;
}

StoredSpan stored_span(const TrunkSection& s, BlockRange r) {
  if (r.first >= r.last) return StoredSpan{};
  const TrunkBlock& a = s.blocks[r.first];
  const TrunkBlock& z = s.blocks[r.last - 1];
  return StoredSpan{a.stored_offset, z.stored_offset + z.stored_size - a.stored_offset};
}

std::string decode_blocks(const TrunkSection& s, BlockRange r, const uint8_t* stored, uint64_t stored_base,
                          uint8_t* dst, uint64_t dst_base, TrunkBlockDecoder& decoder) {
  for (size_t i = r.first; i < r.last; ++i) {
    const TrunkBlock& b = s.blocks[i];
    const std::string err = decoder.decode(stored + (b.stored_offset - stored_base), b.stored_size,
                                           dst + (b.offset - dst_base), b.size, b.xxh3);
    if (!err.empty())
      return "trunk.bin: section " + s.name + " block " + std::to_string(i) + " (stored at byte " +
             std::to_string(b.stored_offset) + "): " + err +
             " (damaged; run k3-pack --check, then re-run k3-pack --compress)";
  }
  return std::string();
}

void zero_section_gaps(const TrunkSection& s, uint8_t* dst) {
  uint64_t pos = s.offset;
  for (const TrunkTensor& t : s.tensors) {
    if (t.offset > pos) std::memset(dst + (pos - s.offset), 0, t.offset - pos);
    pos = std::max(pos, t.offset + t.nbytes);
  }
  if (s.offset + s.length > pos) std::memset(dst + (pos - s.offset), 0, s.offset + s.length - pos);
}

}  // namespace k3
