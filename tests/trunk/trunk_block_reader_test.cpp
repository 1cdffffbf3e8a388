// The engine's compressed-trunk reads: every section (and any block range of
// it) read through the staging pieces and decoded on the I/O threads equals
// the uncompressed trunk.bin byte for byte, with pieces smaller than a
// section so several decode at once; a damaged block fails the read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "common/file.h"
#include "lib/test_util.h"
#include "synth/synth_checkpoint.h"
#include "trunk/block_reader.h"
#include "trunk/writer.h"

namespace fs = std::filesystem;
using namespace k3;
using k3::test::code_of;

namespace {
struct Packed {
  fs::path dir;
  TrunkLayout raw, z;
  std::string raw_bin;
};

// A generated checkpoint with Gaussian weights and sections of several MB.
Packed& packed() {
  static Packed p = [] {
    Packed q;
    q.dir = fs::temp_directory_path() / ("k3-block-reader-" + std::to_string(::getpid()));
    fs::remove_all(q.dir);
    SynthGeometry g;
    synth_preset("tiny-like", &g);
    g.hidden_size = 512;
    g.vocab_size = 4096 + 256;
    g.total_shard_bytes = 0;
    SynthOptions so;
    so.weights = SynthWeights::kNormal;
    write_synthetic_checkpoint((q.dir / "m").string(), g, so);
    Checkpoint c = Checkpoint::open((q.dir / "m").string());
    std::vector<ExpectedTensor> m;
    for (const SynthTensor& s : synth_tensors(g))
      if (!s.vision) m.push_back(s.t);
    q.raw = pack_trunk(c, m, (q.dir / "raw").string(), PackOptions{});
    PackOptions o;
    o.compress = true;
    q.z = pack_trunk(c, m, (q.dir / "z").string(), o);
    q.raw_bin = read_text_file((q.dir / "raw" / "trunk.bin").string());
    return q;
  }();
  return p;
}
}  // namespace

TEST(TrunkBlockReader, SectionsAndRangesDecodeToTheUncompressedBytes) {
  Packed& p = packed();
  ReadEngine io(3, 1u << 20);
  DirectFile file((p.dir / "z" / "trunk.bin").string());
  TrunkBlockReader reader(io, file, 512u << 10);  // 512 KiB pieces: several per section, decoded concurrently
  AlignedBuffer staging(TrunkBlockReader::staging_bytes(512u << 10));
  int multi_piece = 0;
  for (const TrunkSection& s : p.z.sections) {
    if (!s.compressed) continue;
    AlignedBuffer out(s.length);
    std::memset(out.data(), 0x5C, s.length);
    zero_section_gaps(s, out.data());
    const uint64_t read = reader.read_now(s, BlockRange{0, s.blocks.size()}, out.data(), s.offset, s.length, staging);
    EXPECT_LE(read, s.stored_length + 4096 * (2 * s.stored_length / (512u << 10) + 2));  // pieces share edge pages
    multi_piece += s.stored_length > (512u << 10);
    EXPECT_EQ(std::memcmp(out.data(), p.raw_bin.data() + s.offset, s.length), 0) << s.name;
    // A range from the middle (as a head row block reads it).
    const uint64_t begin = s.offset + s.length / 3, end = s.offset + s.length / 2;
    const BlockRange r = blocks_covering(s, begin, end);
    ASSERT_LT(r.first, r.last);
    const uint64_t base = s.blocks[r.first].offset;
    std::vector<uint8_t> part(s.blocks[r.last - 1].offset + s.blocks[r.last - 1].size - base);
    AlignedBuffer dst(part.size());
    reader.read_now(s, r, dst.data(), base, part.size(), staging);
    EXPECT_LE(base, begin);
    EXPECT_EQ(std::memcmp(dst.data(), p.raw_bin.data() + base, part.size()), 0) << s.name;
    // The same range into a target one byte too short (as a damaged table
    // would size it): refused, and not a byte written past the target.
    AlignedBuffer guarded(part.size() + 4096);
    std::memset(guarded.data(), 0x77, guarded.size());
    std::string msg;
    EXPECT_EQ(code_of([&] { reader.read_now(s, r, guarded.data(), base, part.size() - 1, staging); }, &msg),
              ExitCode::kBadModel)
        << s.name;
    EXPECT_NE(msg.find("outside"), std::string::npos) << msg;
    for (uint64_t i = part.size() - 1; i < guarded.size(); ++i)
      ASSERT_EQ(guarded.data()[i], 0x77) << s.name << ": byte " << i << " past the target was written";
  }
  EXPECT_GE(multi_piece, 2);
  EXPECT_GT(reader.decode_seconds(), 0.0);
}

TEST(TrunkBlockReader, DamagedBlockFailsTheRead) {
  Packed& p = packed();
  fs::path copy = p.dir / "damaged";
  fs::create_directories(copy);
  fs::copy_file(p.dir / "z" / "trunk.bin", copy / "trunk.bin", fs::copy_options::overwrite_existing);
  const TrunkSection& s = *p.z.layer_section(1);
  const TrunkBlock& b = s.blocks[s.blocks.size() / 2];
  {
    std::fstream f(copy / "trunk.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(b.stored_offset + b.stored_size / 2);
    f.put('\x33');
  }
  ReadEngine io(2);
  DirectFile file((copy / "trunk.bin").string());
  TrunkBlockReader reader(io, file);
  AlignedBuffer staging(TrunkBlockReader::staging_bytes()), out(s.length);
  try {
    reader.read_now(s, BlockRange{0, s.blocks.size()}, out.data(), s.offset, s.length, staging);
    ADD_FAILURE() << "a damaged block was decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find("layer.1 block " + std::to_string(s.blocks.size() / 2)), std::string::npos)
        << e.what();
  }
}

TEST(TrunkBlockReader, ZZRemoveFiles) { fs::remove_all(packed().dir); }
