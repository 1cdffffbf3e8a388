// AtomicFileWriter and write_file_atomic against what may already sit at an
// output name or a temporary name: planted symbolic links (their targets
// must stay untouched), directories, character devices and FIFOs.
#include "common/atomic_file_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/file.h"
#include "lib/test_util.h"

namespace fs = std::filesystem;
using k3::AtomicFileWriter;
using k3::ExitCode;
using k3::OutputPolicy;
using k3::test::code_of;

namespace {

fs::path scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("k3_atomic_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

bool only_entries(const fs::path& dir, std::initializer_list<std::string> names) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++n;
    if (std::find(names.begin(), names.end(), e.path().filename().string()) == names.end()) return false;
  }
  return n == names.size();
}

}  // namespace

TEST(AtomicFileWriter, WritesAndLeavesNoTemporary) {
  fs::path d = scratch("plain");
  k3::write_file_atomic((d / "out").string(), "hello", 5);
  EXPECT_EQ(slurp(d / "out"), "hello");
  k3::write_file_atomic((d / "out").string(), "bye", 3);  // a regular file is replaced
  EXPECT_EQ(slurp(d / "out"), "bye");
  EXPECT_TRUE(only_entries(d, {"out"}));
  fs::remove_all(d);
}

TEST(AtomicFileWriter, TemporaryNamesAreUnpredictableAndExclusive) {
  fs::path d = scratch("names");
  const std::string out = (d / "trunk.bin").string();
  // Links planted at every name an older writer used do not matter.
  fs::path victim = d / "victim";
  spit(victim, "keep me");
  for (const std::string& n : {out + ".tmp", out + ".tmp." + std::to_string(::getpid()), out + ".part"})
    fs::create_symlink(victim, n);
  AtomicFileWriter a(out), b(out);
  EXPECT_NE(a.temp_path(), b.temp_path());
  EXPECT_EQ(fs::path(a.temp_path()).parent_path(), d);
  EXPECT_FALSE(fs::is_symlink(a.temp_path()));
  a.write("new", 3);
  a.commit();
  EXPECT_EQ(slurp(out), "new");
  EXPECT_EQ(slurp(victim), "keep me");
  fs::remove_all(d);
}

TEST(AtomicFileWriter, CreateExclusiveRefusesAPlantedLink) {
  fs::path d = scratch("excl");
  fs::path victim = d / "victim", link = d / "name.tmp.0123456789abcdef";
  spit(victim, "keep me");
  fs::create_symlink(victim, link);
  std::string msg;
  EXPECT_EQ(code_of([&] { k3::create_exclusive(link.string()); }, &msg), ExitCode::kIo);
  EXPECT_NE(msg.find(link.string()), std::string::npos) << msg;
  fs::create_symlink(d / "dangling-target", d / "dangling");  // a dangling link is not created through either
  EXPECT_EQ(code_of([&] { k3::create_exclusive((d / "dangling").string()); }), ExitCode::kIo);
  EXPECT_FALSE(fs::exists(d / "dangling-target"));
  EXPECT_EQ(slurp(victim), "keep me");
  fs::remove_all(d);
}

TEST(AtomicFileWriter, NeverReplacesALinkDirectoryOrDeviceWithAFile) {
  fs::path d = scratch("final");
  fs::path victim = d / "victim";
  spit(victim, "keep me");
  fs::create_symlink(victim, d / "link");
  fs::create_directory(d / "dir");
  for (OutputPolicy policy : {OutputPolicy::kRegularFile, OutputPolicy::kFileOrStream}) {
    std::string msg;
    EXPECT_EQ(code_of([&] { k3::write_file_atomic((d / "link").string(), "x", 1, policy); }, &msg), ExitCode::kIo);
    EXPECT_NE(msg.find("symbolic link"), std::string::npos) << msg;
    EXPECT_EQ(code_of([&] { k3::write_file_atomic((d / "dir").string(), "x", 1, policy); }, &msg), ExitCode::kIo);
    EXPECT_NE(msg.find("directory"), std::string::npos) << msg;
    EXPECT_EQ(code_of([&] { k3::check_output_path((d / "link").string(), policy); }), ExitCode::kIo);
  }
  // Under kRegularFile a device is refused too, and stays a device.
  EXPECT_EQ(code_of([&] { k3::write_file_atomic("/dev/null", "x", 1); }), ExitCode::kIo);
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_TRUE(fs::is_symlink(d / "link"));
  EXPECT_EQ(slurp(victim), "keep me");
  EXPECT_TRUE(only_entries(d, {"victim", "link", "dir"}));  // no temporary left by the refusals
  // A missing directory is named.
  std::string msg;
  EXPECT_EQ(code_of([&] { k3::check_output_path((d / "no" / "x").string(), OutputPolicy::kFileOrStream); }, &msg),
            ExitCode::kIo);
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
  fs::remove_all(d);
}

TEST(AtomicFileWriter, LinkAppearingBeforeCommitIsNotReplaced) {
  fs::path d = scratch("race");
  fs::path victim = d / "victim", out = d / "out";
  spit(victim, "keep me");
  std::string tmp;
  {
    AtomicFileWriter w(out.string());
    tmp = w.temp_path();
    w.write("x", 1);
    fs::create_symlink(victim, out);
    EXPECT_EQ(code_of([&] { w.commit(); }), ExitCode::kIo);
  }
  EXPECT_TRUE(fs::is_symlink(out));
  EXPECT_EQ(slurp(victim), "keep me");
  EXPECT_FALSE(fs::exists(tmp));
  fs::remove_all(d);
}

TEST(AtomicFileWriter, StreamsAreWrittenThrough) {
  // A character device: /dev/null accepts and stays a device.
  EXPECT_TRUE(k3::check_output_path("/dev/null", OutputPolicy::kFileOrStream));
  k3::write_file_atomic("/dev/null", "abc", 3, OutputPolicy::kFileOrStream);
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // A FIFO: the reader gets the bytes, the FIFO stays a FIFO.
  fs::path d = scratch("fifo");
  fs::path fifo = d / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = slurp(fifo); });
  {
    AtomicFileWriter w(fifo.string(), OutputPolicy::kFileOrStream);
    EXPECT_TRUE(w.is_stream());
    std::string big(3 << 20, 'z');  // more than the writer's buffer
    w.write(big.data(), big.size());
    w.commit();
  }
  reader.join();
  EXPECT_EQ(got.size(), size_t{3} << 20);
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // A link to a stream counts as that stream (/dev/stdout is one).
  fs::create_symlink("/dev/null", d / "null-link");
  EXPECT_TRUE(k3::check_output_path((d / "null-link").string(), OutputPolicy::kFileOrStream));
  EXPECT_TRUE(only_entries(d, {"pipe", "null-link"}));
  fs::remove_all(d);
}

TEST(AtomicFileWriter, RenameOverRegularRefusesNonRegularTargets) {
  fs::path d = scratch("rename");
  fs::path victim = d / "victim";
  spit(victim, "keep me");
  spit(d / "from", "new");
  fs::create_symlink(victim, d / "link");
  EXPECT_EQ(code_of([&] { k3::rename_over_regular((d / "from").string(), (d / "link").string()); }), ExitCode::kIo);
  EXPECT_TRUE(fs::is_symlink(d / "link"));
  EXPECT_EQ(slurp(victim), "keep me");
  k3::rename_over_regular((d / "from").string(), (d / "to").string());
  EXPECT_EQ(slurp(d / "to"), "new");
  fs::remove_all(d);
}

// What a killed writer left (a temporary no live writer holds) is removed on
// the next run; a live writer's temporary, also one committed to its
// temporary name and waiting for its rename, is not; links and other names
// are left alone.
TEST(AtomicFileWriter, StaleTemporariesOfAKilledWriterAreRemoved) {
  fs::path d = scratch("stale");
  const std::string out = (d / "trunk.bin").string();
  // Left by a writer that is gone: created without a lock, as after SIGKILL.
  const std::string stale = k3::random_temp_name(out);
  ::close(k3::create_exclusive(stale));
  spit(stale, std::string(100000, 'x'));
  // Look-alikes that are not ours to remove.
  spit(d / "trunk.bin.tmp.notsixteenhex", "keep");
  spit(d / "trunk.bin.tmp.0123456789ABCDEF", "keep");  // upper case: never a name k3 makes
  spit(d / "other.bin.tmp.0123456789abcdef", "keep");
  spit(d / "victim", "keep me");
  fs::create_symlink(d / "victim", d / "trunk.bin.tmp.aaaaaaaaaaaaaaaa");
  {
    k3::AtomicFileWriter live(out);  // holds its temporary
    live.write("abc", 3);
    const k3::StaleTemporaries r = k3::remove_stale_temporaries(out);
    EXPECT_EQ(r.files, 1u);
    EXPECT_GE(r.bytes, 100000u);
    EXPECT_FALSE(fs::exists(stale));
    EXPECT_TRUE(fs::exists(live.temp_path()));
    live.commit_to_temp();  // complete, waiting for the caller's rename: still held
    EXPECT_EQ(k3::remove_stale_temporaries(out).files, 0u);
    EXPECT_TRUE(fs::exists(live.temp_path()));
    fs::rename(live.temp_path(), out);
  }
  EXPECT_EQ(slurp(out), "abc");
  EXPECT_EQ(slurp(d / "victim"), "keep me");
  EXPECT_TRUE(fs::is_symlink(d / "trunk.bin.tmp.aaaaaaaaaaaaaaaa"));
  EXPECT_TRUE(fs::exists(d / "trunk.bin.tmp.notsixteenhex"));
  EXPECT_TRUE(fs::exists(d / "trunk.bin.tmp.0123456789ABCDEF"));
  EXPECT_TRUE(fs::exists(d / "other.bin.tmp.0123456789abcdef"));
  fs::remove_all(d);
}
