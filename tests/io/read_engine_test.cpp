// O_DIRECT reads, the buffered fallback, and the parallel read engine:
// bytes match plain reads for any alignment, and a file that is shorter than
// expected is an I/O error naming it, never silent garbage.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include "common/error.h"
#include "io/aligned_buffer.h"
#include "io/direct_file.h"
#include "io/read_engine.h"
#include "lib/engine_gate.h"
#include "lib/huge_pages.h"

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

// A buffer that asks for huge pages is 2 MiB-aligned, a whole number of
// them, zero-filled, and its whole range is flagged for transparent huge
// pages (madvise before the first touch) wherever the kernel has them.
TEST(AlignedBuffer, HugePagesAreAskedForTheWholeBuffer) {
  AlignedBuffer b(5 * 1000 * 1000, AlignedBuffer::HugePages{});
  ASSERT_EQ(b.size(), 3 * kHugePageBytes);
  const auto at = reinterpret_cast<uintptr_t>(b.data());
  EXPECT_EQ(at % kHugePageBytes, 0u);
  for (size_t i = 0; i < b.size(); i += 4096) ASSERT_EQ(b.data()[i], 0) << i;
  if (test::kernel_has_thp()) {
    EXPECT_EQ(test::madvised_huge_bytes(at, at + b.size()), b.size());
  }
  AlignedBuffer plain(5 * 1000 * 1000);
  const auto p = reinterpret_cast<uintptr_t>(plain.data());
  EXPECT_EQ(test::madvised_huge_bytes(p, p + plain.size()), 0u) << "an ordinary buffer asked for huge pages";
  EXPECT_EQ(AlignedBuffer(0, AlignedBuffer::HugePages{}).data(), nullptr);
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

// A background group can be cancelled while none of it has started (its
// bytes are never read, its callback never runs) and promoted behind the
// urgent groups; the engine's one thread is held so the queue is known.
TEST(ReadEngine, CancelDropsAQueuedGroupAndPromoteMovesOneAhead) {
  std::vector<uint8_t> data;
  fs::path p = make_file(tmp(), "q.bin", 1 << 20, &data);
  DirectFile f(p.string());
  ReadEngine engine(1, 64 * 1024);
  const uint64_t len = 128 * 1024;  // two pieces per group
  std::vector<AlignedBuffer> bufs;
  for (int i = 0; i < 4; ++i) {
    bufs.emplace_back(len);
    std::memset(bufs.back().data(), 0xAB, len);
  }
  std::mutex mu;
  std::vector<std::string> order;
  auto rec = [&](const std::string& name) {
    return [&, name](const std::string& err) {
      std::lock_guard<std::mutex> lk(mu);
      order.push_back(name + err);
    };
  };
  auto read = [&](int i) { return std::vector<ReadEngine::Read>{{&f, len * i, len, len, bufs[i].data()}}; };
  test::EngineGate gate(engine, f);
  const uint64_t before = engine.bytes_read();
  const uint64_t a = engine.submit(read(0), rec("a"), false);
  const uint64_t b = engine.submit(read(1), rec("b"), false);
  const uint64_t c = engine.submit(read(2), rec("c"), true);
  engine.submit(read(3), rec("d"), false);
  EXPECT_NE(a, b);
  engine.promote(b);
  const ReadEngine::Cancelled ca = engine.cancel(a);
  EXPECT_EQ(ca.bytes, len);
  EXPECT_FALSE(ca.started);
  EXPECT_EQ(engine.cancel(a).bytes, 0u) << "cancelled twice";
  ReadLatch last;
  engine.submit(read(3), last.callback(), false);
  gate.open();
  last.wait();
  EXPECT_EQ(order, (std::vector<std::string>{"c", "b", "d"}));
  EXPECT_EQ(engine.bytes_read() - before, 4 * len) << "b, c, d and the last";
  for (size_t i = 0; i < len; ++i) ASSERT_EQ(bufs[0].data()[i], 0xAB) << "the cancelled group wrote byte " << i;
  for (int i = 1; i < 4; ++i) EXPECT_EQ(std::memcmp(bufs[i].data(), data.data() + len * i, len), 0) << i;
  EXPECT_EQ(engine.cancel(c).bytes, 0u) << "a finished group";
  EXPECT_EQ(engine.submit({}, rec("empty"), false), 0u);
  fs::remove_all(tmp());
}

// Speculative groups are read at most `speculative_limit` pieces at once
// (a piece counts until its callback returned) and only when no urgent or
// background piece is queued: one held in its callback keeps the next one
// queued, and cancellable, while urgent reads pass it.
TEST(ReadEngine, SpeculativeReadsAreFewInFlightAndStayCancellable) {
  std::vector<uint8_t> data;
  fs::path p = make_file(tmp(), "s.bin", 1 << 20, &data);
  DirectFile f(p.string());
  ReadEngine engine(2, 64 * 1024, /*speculative_limit=*/1);
  const uint64_t len = 64 * 1024;
  std::vector<AlignedBuffer> bufs;
  for (int i = 0; i < 4; ++i) bufs.emplace_back(len);
  auto read = [&](int i) { return std::vector<ReadEngine::Read>{{&f, len * i, len, len, bufs[i].data()}}; };
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false;
  engine.submit(
      read(0),
      [&](const std::string&) {
        std::unique_lock<std::mutex> lk(mu);
        entered = true;
        cv.notify_all();
        cv.wait(lk, [&] { return release; });
      },
      ReadEngine::Priority::kSpeculative);
  {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return entered; });
  }
  const uint64_t before = engine.bytes_read();
  ReadLatch second, third;
  const uint64_t s2 = engine.submit(read(1), second.callback(), ReadEngine::Priority::kSpeculative);
  const uint64_t s3 = engine.submit(read(2), third.callback(), ReadEngine::Priority::kSpeculative);
  engine.read_now(read(3));  // the idle thread serves it, not the queued guesses
  EXPECT_EQ(engine.bytes_read() - before, len);
  EXPECT_FALSE(second.done());
  EXPECT_EQ(engine.cancel(s2).bytes, len);
  {
    std::lock_guard<std::mutex> lk(mu);
    release = true;
    cv.notify_all();
  }
  third.wait();
  EXPECT_FALSE(second.done()) << "a cancelled group's callback ran";
  EXPECT_EQ(engine.bytes_read() - before, 2 * len);
  EXPECT_EQ(std::memcmp(bufs[2].data(), data.data() + 2 * len, len), 0);
  EXPECT_EQ(engine.cancel(s3).bytes, 0u);
  fs::remove_all(tmp());
}

// A group cancelled while a piece of it is being read (a large guessed
// read, such as a real K3 expert's 4-5 pieces) is cut: its queued pieces are
// never read, the started ones land, and its callback runs once, with
// kCancelled. One thread reads a group of 256 small pieces; the cancel comes
// once the first has landed (a retry if the disk was faster than this
// thread and the whole group landed first).
TEST(ReadEngine, CancelCutsAGroupBetweenItsPieces) {
  std::vector<uint8_t> data;
  const uint64_t piece = 4096, pieces = 1024, len = piece * pieces;  // a wide window for the cut
  fs::path p = make_file(tmp(), "cut.bin", len, &data);
  DirectFile f(p.string());
  int cuts = 0;
  for (int attempt = 0; attempt < 20 && cuts == 0; ++attempt) {
    AlignedBuffer buf(len);
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> calls;
    ReadEngine engine(1, piece);  // destroyed first: its threads end before what the callback touches
    const uint64_t id = engine.submit(
        {ReadEngine::Read{&f, 0, len, len, buf.data()}},
        [&](const std::string& err) {
          std::lock_guard<std::mutex> lk(mu);
          calls.push_back(err);
          cv.notify_all();
        },
        ReadEngine::Priority::kSpeculative);
    while (engine.bytes_read() == 0) std::this_thread::yield();
    const ReadEngine::Cancelled c = engine.cancel(id);
    {
      std::unique_lock<std::mutex> lk(mu);
      ASSERT_TRUE(cv.wait_for(lk, std::chrono::seconds(10), [&] { return !calls.empty(); }))
          << "a cut group's callback never ran";
    }
    engine.read_now({ReadEngine::Read{&f, 0, piece, piece, buf.data()}});  // the engine is idle after it
    std::lock_guard<std::mutex> lk(mu);
    ASSERT_EQ(calls.size(), 1u) << "the callback runs once";
    if (c.bytes == 0) {  // the whole group had landed: it completed as submitted
      EXPECT_EQ(calls[0], "");
      continue;
    }
    ++cuts;
    EXPECT_TRUE(c.started);
    EXPECT_EQ(calls[0], ReadEngine::kCancelled);
    EXPECT_EQ(c.bytes % piece, 0u);
    EXPECT_LT(c.bytes, len);
    // The cut pieces were never read; the one in flight then may have
    // seen the cut before its read and skipped it.
    const uint64_t landed = engine.bytes_read() - piece;
    EXPECT_LE(landed, len - c.bytes);
    EXPECT_GE(landed + piece, len - c.bytes);
  }
  EXPECT_EQ(cuts, 1) << "no attempt caught the group between its pieces";
  fs::remove_all(tmp());
}
