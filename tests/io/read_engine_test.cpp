// O_DIRECT reads, the buffered fallback, and the parallel read engine:
// bytes match plain reads for any alignment, and a file that is shorter than
// expected is an I/O error naming it, never silent garbage.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "common/error.h"
#include "io/aligned_buffer.h"
#include "io/direct_file.h"
#include "io/read_engine.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {
fs::path make_file(const fs::path& dir, const std::string& name, size_t n, std::vector<uint8_t>* out) {
  fs::create_directories(dir);
  std::mt19937_64 rng(n);
  out->resize(n);
  for (auto& b : *out) b = static_cast<uint8_t>(rng());
  fs::path p = dir / name;
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(out->data()), n);
  return p;
}
fs::path tmp() { return fs::temp_directory_path() / ("k3-io-" + std::to_string(::getpid())); }
}  // namespace

TEST(DirectFile, CoveringReadMath) {
  CoveringRead r = covering_read(5000, 100);
  EXPECT_EQ(r.offset, 4096u);
  EXPECT_EQ(r.skip, 904u);
  EXPECT_EQ(r.length, 4096u);
  r = covering_read(4096, 4097);
  EXPECT_EQ(r.offset, 4096u);
  EXPECT_EQ(r.length, 8192u);
  r = covering_read(8191, 2);
  EXPECT_EQ(r.length, 8192u);
  // 64-bit offsets: a 16 GB shard.
  r = covering_read((16ull << 30) + 10, 1);
  EXPECT_EQ(r.offset, 16ull << 30);
}

TEST(DirectFile, ReadsAnyRangeExactly) {
  std::vector<uint8_t> data;
  fs::path p = make_file(tmp(), "a.bin", 3 * 1024 * 1024 + 123, &data);
  DirectFile f(p.string());
  std::mt19937_64 rng(1);
  for (int i = 0; i < 200; ++i) {
    uint64_t off = rng() % data.size();
    uint64_t len = 1 + rng() % std::min<uint64_t>(data.size() - off, 300000);
    CoveringRead c = covering_read(off, len);
    AlignedBuffer buf(c.length);
    f.read_aligned(buf.data(), c.offset, c.length, c.skip + len);
    ASSERT_EQ(std::memcmp(buf.data() + c.skip, data.data() + off, len), 0) << off << "+" << len;
  }
  fs::remove_all(tmp());
}

TEST(DirectFile, FallsBackWhereODirectIsRefused) {
  // tmpfs refuses O_DIRECT; where /dev/shm is not tmpfs the file opens direct and that is fine too.
  if (!fs::exists("/dev/shm")) GTEST_SKIP() << "no /dev/shm on this system";
  static std::atomic<int> warnings{0};
  set_direct_fallback_warning([](const std::string&, const std::string&) { ++warnings; });
  std::vector<uint8_t> data;
  fs::path p = make_file(fs::path("/dev/shm") / ("k3-io-" + std::to_string(::getpid())), "b.bin", 10000, &data);
  DirectFile f(p.string());
  DirectFile g(p.string());
  if (!f.is_direct()) {
    EXPECT_EQ(warnings.load(), 1) << "one warning, not one per file";
  }
  AlignedBuffer buf(12288);
  f.read_aligned(buf.data(), 0, 12288, 10000);
  EXPECT_EQ(std::memcmp(buf.data(), data.data(), 10000), 0);
  set_direct_fallback_warning(nullptr);
  fs::remove_all(p.parent_path());
}

TEST(DirectFile, ShortFileIsAnIoError) {
  std::vector<uint8_t> data;
  fs::path p = make_file(tmp(), "short.bin", 5000, &data);
  DirectFile f(p.string());
  AlignedBuffer buf(8192);
  try {
    f.read_aligned(buf.data(), 4096, 4096, 4096);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kIo);
    EXPECT_NE(std::string(e.what()).find("short.bin"), std::string::npos);
  }
  EXPECT_THROW(DirectFile((tmp() / "missing.bin").string()), Error);
  fs::remove_all(tmp());
}

TEST(ReadEngine, ManyGroupsInParallel) {
  std::vector<uint8_t> data;
  fs::path p = make_file(tmp(), "c.bin", 8 * 1024 * 1024, &data);
  DirectFile f(p.string());
  ReadEngine engine(6, 64 * 1024);
  std::mt19937_64 rng(2);
  struct Want {
    uint64_t off, len;
    CoveringRead c;
    AlignedBuffer buf;
  };
  std::vector<Want> wants;
  for (int i = 0; i < 64; ++i) {
    uint64_t off = rng() % (data.size() - 1);
    uint64_t len = 1 + rng() % std::min<uint64_t>(data.size() - off, 1 << 20);
    CoveringRead c = covering_read(off, len);
    wants.push_back(Want{off, len, c, AlignedBuffer(c.length)});
  }
  std::atomic<int> done{0};
  std::vector<std::unique_ptr<ReadLatch>> latches;
  for (Want& w : wants) {
    latches.push_back(std::make_unique<ReadLatch>());
    auto inner = latches.back()->callback();
    engine.submit(
        {ReadEngine::Read{&f, w.c.offset, w.c.length, w.c.skip + w.len, w.buf.data()}},
        [&, inner](const std::string& err) {
          ++done;
          inner(err);
        },
        done.load() % 2 == 0);
  }
  for (auto& l : latches) l->wait();
  EXPECT_EQ(done.load(), 64);
  for (Want& w : wants) ASSERT_EQ(std::memcmp(w.buf.data() + w.c.skip, data.data() + w.off, w.len), 0);
  EXPECT_GT(engine.bytes_read(), 0u);
  fs::remove_all(tmp());
}

TEST(ReadEngine, FileThatShrinksGivesIoError) {
  std::vector<uint8_t> data;
  fs::path p = make_file(tmp(), "shrink.bin", 4 << 20, &data);
  DirectFile f(p.string());
  ReadEngine engine(4, 1 << 20);
  AlignedBuffer buf(4 << 20);
  engine.read_now({ReadEngine::Read{&f, 0, 4 << 20, 4 << 20, buf.data()}});
  fs::resize_file(p, 1 << 20);  // shrinks under the open descriptor
  try {
    engine.read_now({ReadEngine::Read{&f, 0, 4 << 20, 4 << 20, buf.data()}});
    FAIL() << "expected an I/O error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kIo);
    EXPECT_NE(std::string(e.what()).find("shrink.bin"), std::string::npos) << e.what();
  }
  fs::remove_all(tmp());
}
