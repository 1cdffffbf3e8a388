// A block decode writes only inside its target, whatever trunk.json says:
// decode_blocks and check_raw_blocks refuse a block whose decoded or stored
// bytes fall outside the spans given (also with offsets near 2^64 that would
// wrap a sum), naming the section and the block, and leave the bytes around
// the target untouched. The same blocks within their spans decode to the
// original bytes.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <limits>
#include <vector>

#include "trunk/blocks.h"
#include "trunk/codec.h"

using namespace k3;

namespace {

constexpr uint64_t kBase = 1 << 20;  // the section's decoded offset
constexpr uint64_t kStoredBase = 4096;
constexpr uint8_t kGuard = 0xa5;

struct Packed {
  TrunkSection s;
  std::vector<uint8_t> stored, original;
};

// A compressed section of two 1000-byte blocks stored back to back.
Packed pack_two_blocks() {
  Packed p;
  p.original.resize(2000);
  for (size_t i = 0; i < p.original.size(); ++i) p.original[i] = static_cast<uint8_t>(i * 7 + i / 13);
  p.s.name = "layer.3";
  p.s.offset = kBase;
  p.s.length = 4096;
  p.s.stored_offset = kStoredBase;
  p.s.compressed = true;
  TrunkBlockEncoder enc;
  for (int k = 0; k < 2; ++k) {
    std::vector<uint8_t> out;
    enc.encode(p.original.data() + 1000 * k, 1000, true, &out);
    TrunkBlock b;
    b.offset = kBase + 1000 * k;
    b.size = 1000;
    b.stored_offset = kStoredBase + p.stored.size();
    b.stored_size = out.size();
    b.xxh3 = XXH3_64bits(p.original.data() + 1000 * k, 1000);
    p.stored.insert(p.stored.end(), out.begin(), out.end());
    p.s.blocks.push_back(b);
  }
  p.s.stored_length = p.stored.size();
  return p;
}

// Decodes both blocks of `p` into a target of `len` bytes from decoded
// offset `base`, inside a buffer with guard bytes on both sides; returns the
// error and checks the guards.
std::string decode_guarded(const Packed& p, uint64_t base, uint64_t len, std::vector<uint8_t>* target = nullptr) {
  std::vector<uint8_t> buf(len + 2 * 4096, kGuard);
  TrunkBlockDecoder dec;
  const std::string err = decode_blocks(p.s, BlockRange{0, 2}, p.stored.data(), kStoredBase, p.stored.size(),
                                        buf.data() + 4096, base, len, dec);
  for (size_t i = 0; i < 4096; ++i) {
    EXPECT_EQ(buf[i], kGuard) << "written before the target at " << i;
    EXPECT_EQ(buf[4096 + len + i], kGuard) << "written past the target at " << i;
  }
  if (target) target->assign(buf.begin() + 4096, buf.begin() + 4096 + static_cast<std::ptrdiff_t>(len));
  return err;
}

}  // namespace

TEST(TrunkBlocks, BlocksInsideTheirSpansDecode) {
  const Packed p = pack_two_blocks();
  std::vector<uint8_t> got;
  EXPECT_EQ(decode_guarded(p, kBase, 2000, &got), "");
  EXPECT_EQ(got, p.original);
}

TEST(TrunkBlocks, ADecodedRangeOutsideTheTargetIsRefusedUnwritten) {
  struct Case {
    const char* what;
    uint64_t offset, size;
  };
  const uint64_t kMax = std::numeric_limits<uint64_t>::max();
  for (const Case& c : {Case{"past the end", kBase + 1500, 1000}, Case{"before the start", kBase - 8, 1000},
                        Case{"larger than the target", kBase + 1000, 5000}, Case{"wrapping", kMax - 100, 1000},
                        Case{"size near 2^64", kBase + 1000, kMax - 10}}) {
    Packed p = pack_two_blocks();
    p.s.blocks[1].offset = c.offset;
    p.s.blocks[1].size = c.size;
    const std::string err = decode_guarded(p, kBase, 2000);
    EXPECT_NE(err.find("section layer.3 block 1 lies outside the bytes read for it"), std::string::npos)
        << c.what << ": " << err;
  }
}

TEST(TrunkBlocks, AStoredRangeOutsideTheBytesReadIsRefused) {
  const uint64_t kMax = std::numeric_limits<uint64_t>::max();
  for (const auto& [offset, size] : std::vector<std::pair<uint64_t, uint64_t>>{
           {kStoredBase + 10, 4096}, {kStoredBase - 1, 100}, {kMax - 4, 100}, {kStoredBase, kMax}}) {
    Packed p = pack_two_blocks();
    p.s.blocks[0].stored_offset = offset;
    p.s.blocks[0].stored_size = size;
    const std::string err = decode_guarded(p, kBase, 2000);
    EXPECT_NE(err.find("section layer.3 block 0 lies outside"), std::string::npos)
        << offset << "+" << size << ": " << err;
  }
  const Packed p = pack_two_blocks();  // a block range past the section's blocks
  TrunkBlockDecoder dec;
  std::vector<uint8_t> out(2000);
  const std::string err = decode_blocks(p.s, BlockRange{1, 3}, p.stored.data(), kStoredBase, p.stored.size(),
                                        out.data(), kBase, out.size(), dec);
  EXPECT_NE(err.find("blocks 1 to 3 of 2"), std::string::npos) << err;
}

TEST(TrunkBlocks, RawBlocksOutsideTheBytesReadAreRefused) {
  Packed p = pack_two_blocks();
  p.s.compressed = false;
  EXPECT_EQ(check_raw_blocks(p.s, BlockRange{0, 2}, p.original.data(), kBase, 2000, nullptr, "trunk.bin"), "");
  p.s.blocks[1].offset = kBase + 1500;
  const std::string err = check_raw_blocks(p.s, BlockRange{0, 2}, p.original.data(), kBase, 2000, nullptr, "trunk.bin");
  EXPECT_NE(err.find("trunk.bin: section layer.3 block 1 lies outside the bytes read for it"), std::string::npos)
      << err;
  p.s.blocks[1].offset = std::numeric_limits<uint64_t>::max() - 10;
  EXPECT_NE(check_raw_blocks(p.s, BlockRange{0, 2}, p.original.data(), kBase, 2000, nullptr, "trunk.bin")
                .find("block 1 lies outside"),
            std::string::npos);
}
