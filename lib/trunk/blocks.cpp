#include "trunk/blocks.h"

#include <algorithm>
#include <cstring>

#include <xxhash.h>

#include "common/error.h"
#include "trunk/pack_command.h"

namespace k3 {

BlockRange blocks_covering(const TrunkSection& s, uint64_t begin, uint64_t end) {
  // Blocks are in ascending decoded order without overlap: place_trunk_blocks
  // refuses a section whose tensors are not, and places every block.
  auto after_begin = std::partition_point(s.blocks.begin(), s.blocks.end(),
                                          [&](const TrunkBlock& b) { return b.offset + b.size <= begin; });
  auto at_end = std::partition_point(after_begin, s.blocks.end(), [&](const TrunkBlock& b) { return b.offset < end; });
  return BlockRange{static_cast<size_t>(after_begin - s.blocks.begin()),
                    static_cast<size_t>(at_end - s.blocks.begin())};
}

BlockRange tensor_blocks(const TrunkSection& s, const TrunkTensor& t) {
  const BlockRange r = blocks_covering(s, t.offset, t.offset + t.nbytes);
  if (r.first == r.last || s.blocks[r.first].offset != t.offset)
    throw Error(ExitCode::kBadModel,
                "trunk section " + s.name + " has no blocks starting at '" + t.name + "' " + rerun_pack_hint(true));
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
                          uint64_t stored_len, uint8_t* dst, uint64_t dst_base, uint64_t dst_len,
                          TrunkBlockDecoder& decoder) {
  if (r.last > s.blocks.size() || r.first > r.last)
    return "trunk.json: section " + s.name + ": blocks " + std::to_string(r.first) + " to " + std::to_string(r.last) +
           " of " + std::to_string(s.blocks.size()) + " (damaged; re-run " + spelled(kPackTrunk) + ")";
  for (size_t i = r.first; i < r.last; ++i) {
    const TrunkBlock& b = s.blocks[i];
    // Both spans are checked without sums that could wrap.
    if (b.offset < dst_base || b.size > dst_len || b.offset - dst_base > dst_len - b.size ||
        b.stored_offset < stored_base || b.stored_size > stored_len ||
        b.stored_offset - stored_base > stored_len - b.stored_size)
      return "trunk.json: section " + s.name + " block " + std::to_string(i) +
             " lies outside the bytes read for it (damaged; re-run " + spelled(kPackTrunk) + ")";
    const std::string err = decoder.decode(stored + (b.stored_offset - stored_base), b.stored_size,
                                           dst + (b.offset - dst_base), b.size, b.xxh3);
    if (!err.empty())
      return "trunk.bin: section " + s.name + " block " + std::to_string(i) + " (stored at byte " +
             std::to_string(b.stored_offset) + "): " + err + " (damaged; run " + spelled(kCheckTrunk) +
             ", then re-run " + repack_command(true) + ")";
  }
  return std::string();
}

std::string check_raw_blocks(const TrunkSection& s, BlockRange r, const uint8_t* data, uint64_t data_base,
                             uint64_t data_len, std::atomic<bool>* verified, const std::string& file) {
  if (r.last > s.blocks.size() || r.first > r.last)
    return file + ": section " + s.name + " has no blocks " + std::to_string(r.first) + " to " +
           std::to_string(r.last) + " (trunk.json damaged; re-run " + spelled(kPackTrunk) + ")";
  for (size_t i = r.first; i < r.last; ++i) {
    if (verified && verified[i].load(std::memory_order_acquire)) continue;
    const TrunkBlock& b = s.blocks[i];
    if (b.offset < data_base || b.size > data_len || b.offset - data_base > data_len - b.size)
      return file + ": section " + s.name + " block " + std::to_string(i) +
             " lies outside the bytes read for it (trunk.json damaged; re-run " + spelled(kPackTrunk) + ")";
    if (XXH3_64bits(data + (b.offset - data_base), b.size) != b.xxh3)
      return file + ": section " + s.name + " block " + std::to_string(i) + " (bytes " +
             std::to_string(b.stored_offset) + " to " + std::to_string(b.stored_offset + b.size) +
             ") does not match its hash in trunk.json (damaged; run " + spelled(kCheckTrunk) + ", then re-run " +
             spelled(kPackTrunk) + ")";
    if (verified) verified[i].store(true, std::memory_order_release);
  }
  return std::string();
}

bool blocks_verified(BlockRange r, const std::atomic<bool>* verified) {
  if (!verified) return false;
  for (size_t i = r.first; i < r.last; ++i)
    if (!verified[i].load(std::memory_order_acquire)) return false;
  return true;
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
