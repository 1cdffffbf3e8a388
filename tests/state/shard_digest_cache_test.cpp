// The shard digest cache behind the state files' model fingerprint: a second
// fingerprint of an unchanged checkpoint reads no shard byte; any change to
// a shard's identity (contents, touch, chmod, replacement) reads that shard
// again; a cache file that is damaged, edited, a link or writable by others
// is ignored (every shard read, the right fingerprint), and a place that
// cannot be written costs nothing but the read.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "common/file.h"
#include "lib/test_util.h"
#include "state/model_fingerprint.h"
#include "state/shard_digest_cache.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {
const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

struct Scratch {
  fs::path dir, model, cache;
  explicit Scratch(const std::string& tag) : dir(test::fresh_dir("digest-cache-" + tag)) {
    model = dir / "m";
    fs::create_directories(model);
    for (const auto& e : fs::directory_iterator(kTiny)) fs::copy_file(e.path(), model / e.path().filename());
    for (auto& e : fs::directory_iterator(model))
      fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
    cache = dir / "cache" / "k3" / "shard-digests";
  }
  ~Scratch() { fs::remove_all(dir); }
  uint64_t shard_bytes() const {
    uint64_t n = 0;
    const Checkpoint ck = Checkpoint::open(model.string());
    for (const ShardInfo& s : ck.shards()) n += s.file_size;
    return n;
  }
};

struct Fingerprinted {
  ModelFingerprint fp;
  uint64_t bytes_read = 0;
};
// One fingerprint with a cache read from `cache_path` (as a tool run makes it).
Fingerprinted fingerprint_with_cache(const fs::path& model, const fs::path& cache_path) {
  ShardDigestCache cache(cache_path.string());
  const uint64_t before = shard_digest_bytes_read();
  Fingerprinted r;
  r.fp = fingerprint_model(Checkpoint::open(model.string()), nullptr, &cache);
  r.bytes_read = shard_digest_bytes_read() - before;
  return r;
}

ModelFingerprint uncached(const fs::path& model) { return fingerprint_model(Checkpoint::open(model.string())); }

// The cache file's text with its checksum line made right again, as a
// deliberate edit would leave it.
std::string with_checksum(std::string body) {
  char line[32];
  std::snprintf(line, sizeof line, "end %016llx\n",
                static_cast<unsigned long long>(XXH3_64bits(body.data(), body.size())));
  return body + line;
}
std::string body_of(const fs::path& cache) {
  std::string text = read_text_file(cache.string());
  return text.substr(0, text.rfind("end "));
}
void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary | std::ios::trunc) << text; }

const std::string& first_shard(const fs::path& model) {
  static std::string path;
  path = Checkpoint::open(model.string()).shards().at(0).path;
  return path;
}
}  // namespace

TEST(ShardDigestCache, TheSecondFingerprintReadsNoShard) {
  Scratch s("second");
  const ModelFingerprint right = uncached(s.model);
  const Fingerprinted first = fingerprint_with_cache(s.model, s.cache);
  EXPECT_EQ(first.fp, right);
  EXPECT_EQ(first.bytes_read, s.shard_bytes());
  ASSERT_TRUE(fs::is_regular_file(s.cache));
  EXPECT_EQ(ShardDigestCache(s.cache.string()).size(), 5u);
  const Fingerprinted second = fingerprint_with_cache(s.model, s.cache);
  EXPECT_EQ(second.fp, right);
  EXPECT_EQ(second.bytes_read, 0u);
}

TEST(ShardDigestCache, AChangedShardIsReadAgainAndOnlyIt) {
  Scratch s("changed");
  fingerprint_with_cache(s.model, s.cache);
  const std::string shard = first_shard(s.model);
  const uint64_t size = fs::file_size(shard);
  // New contents (same size): the weights hash changes, and only this shard is read.
  test::flip_byte(shard, size - 1);
  const Fingerprinted r = fingerprint_with_cache(s.model, s.cache);
  EXPECT_EQ(r.fp, uncached(s.model));
  EXPECT_EQ(r.bytes_read, size);
  // Each way a file's identity changes without its bytes: read again, same fingerprint.
  const ModelFingerprint now = r.fp;
  auto read_again = [&](const char* how) {
    const Fingerprinted again = fingerprint_with_cache(s.model, s.cache);
    EXPECT_EQ(again.fp, now) << how;
    EXPECT_EQ(again.bytes_read, size) << how;
  };
  ::usleep(10000);
  ASSERT_EQ(::utime(shard.c_str(), nullptr), 0);  // touch: modification and status-change times
  read_again("touch");
  ::usleep(10000);
  fs::permissions(shard, fs::perms::group_read, fs::perm_options::remove);  // chmod: status-change time only
  read_again("chmod");
  fs::copy_file(shard, shard + ".new");
  fs::rename(shard + ".new", shard);  // replaced by a copy: another inode
  read_again("replace");
}

TEST(ShardDigestCache, AnyFieldOfTheKeyMisses) {
  Scratch s("key");
  ShardDigestCache c((s.dir / "c").string());
  const ShardFileKey k{1, 2, 3, 4, 5};
  const std::string d(32, 'a');
  c.put(k, d);
  EXPECT_EQ(c.find(k), d);
  for (int field = 0; field < 5; ++field) {
    ShardFileKey other = k;
    if (field == 0) other.dev++;
    if (field == 1) other.ino++;
    if (field == 2) other.size++;
    if (field == 3) other.mtime_ns++;
    if (field == 4) other.ctime_ns++;
    EXPECT_EQ(c.find(other), "") << "field " << field;
  }
  c.put(k, "not a digest");  // never remembered
  EXPECT_EQ(c.find(k), d);
}

TEST(ShardDigestCache, AnEditedEntryOfATouchedShardGivesTheRightFingerprint) {
  Scratch s("edited");
  const ModelFingerprint right = fingerprint_with_cache(s.model, s.cache).fp;
  // Every remembered digest replaced by another, the checksum made right
  // (a deliberate edit), while the shard is touched: the edited entries no
  // longer match the shard, which is read again.
  std::string body = body_of(s.cache);
  int edited = 0;
  for (size_t at = body.find('\n') + 1; (at = body.find('\n', at)) != std::string::npos; ++at, ++edited)
    body.replace(at - 32, 32, std::string(32, 'f'));
  ASSERT_EQ(edited, 5);
  write(s.cache, with_checksum(body));
  ::usleep(10000);
  const Checkpoint ck = Checkpoint::open(s.model.string());
  for (const ShardInfo& sh : ck.shards()) ASSERT_EQ(::utime(sh.path.c_str(), nullptr), 0);
  const Fingerprinted r = fingerprint_with_cache(s.model, s.cache);
  EXPECT_EQ(r.fp, right);
  EXPECT_EQ(r.bytes_read, s.shard_bytes());
  // And the cache holds the right digests again: the next run reads nothing.
  EXPECT_EQ(fingerprint_with_cache(s.model, s.cache).bytes_read, 0u);
}

TEST(ShardDigestCache, ADamagedOrForeignCacheFileIsIgnored) {
  Scratch s("damaged");
  const ModelFingerprint right = fingerprint_with_cache(s.model, s.cache).fp;
  const std::string good = read_text_file(s.cache.string());
  const std::string body = body_of(s.cache);
  const size_t first_line = body.find('\n') + 1;
  std::string other_digest = body;  // one digest changed, the checksum left as it was
  char& last_digit = other_digest[body.find('\n', first_line) - 1];
  last_digit = last_digit == '0' ? '1' : '0';
  const std::vector<std::pair<const char*, std::string>> bad = {
      {"truncated", good.substr(0, good.size() / 2)},
      {"garbage", std::string(4000, '\xff')},
      {"empty", ""},
      {"digest edited, checksum not", other_digest + good.substr(body.size())},
      {"another header", with_checksum("k3-shard-digests 2\n" + body.substr(first_line))},
      {"a seventh field", with_checksum(body.substr(0, body.size() - 1) + " 7\n")},
      {"a negative size", with_checksum(body.substr(0, first_line) + "1 2 -3 4 5 " + std::string(32, 'a') + "\n")},
      {"an upper-case digest", with_checksum(body.substr(0, first_line) + "1 2 3 4 5 " + std::string(32, 'A') + "\n")},
      {"no end line", body},
  };
  for (const auto& [what, text] : bad) {
    write(s.cache, text);
    EXPECT_EQ(ShardDigestCache(s.cache.string()).size(), 0u) << what;
    const Fingerprinted r = fingerprint_with_cache(s.model, s.cache);
    EXPECT_EQ(r.fp, right) << what;
    EXPECT_EQ(r.bytes_read, s.shard_bytes()) << what;
    EXPECT_EQ(read_text_file(s.cache.string()), good) << what << ": rewritten whole";
  }
  // Group- or world-writable: someone else could have written it.
  fs::permissions(s.cache, fs::perms::group_write, fs::perm_options::add);
  EXPECT_EQ(ShardDigestCache(s.cache.string()).size(), 0u);
  fs::permissions(s.cache, fs::perms::group_write, fs::perm_options::remove);
  EXPECT_EQ(ShardDigestCache(s.cache.string()).size(), 5u);
}

TEST(ShardDigestCache, ALinkIsNeitherReadNorWrittenThrough) {
  Scratch s("link");
  const fs::path real = s.dir / "real-cache";
  fingerprint_with_cache(s.model, real);
  const std::string target_text = read_text_file(real.string());
  fs::create_directories(s.cache.parent_path());
  fs::create_symlink(real, s.cache);
  EXPECT_EQ(ShardDigestCache(s.cache.string()).size(), 0u);  // a valid file behind the link is not read
  const Fingerprinted r = fingerprint_with_cache(s.model, s.cache);
  EXPECT_EQ(r.fp, uncached(s.model));
  EXPECT_EQ(r.bytes_read, s.shard_bytes());
  EXPECT_TRUE(fs::is_symlink(s.cache));                   // not replaced
  EXPECT_EQ(read_text_file(real.string()), target_text);  // nor written through
}

TEST(ShardDigestCache, AnUnwritablePlaceOnlyCostsTheRead) {
  Scratch s("unwritable");
  write(s.dir / "file", "x");
  const fs::path under_a_file = s.dir / "file" / "k3" / "shard-digests";
  const ModelFingerprint right = uncached(s.model);
  for (int run = 0; run < 2; ++run) {
    const Fingerprinted r = fingerprint_with_cache(s.model, under_a_file);
    EXPECT_EQ(r.fp, right);
    EXPECT_EQ(r.bytes_read, s.shard_bytes());
  }
  ShardDigestCache none("");
  none.put(ShardFileKey{1, 2, 3, 4, 5}, std::string(32, 'a'));
  EXPECT_FALSE(none.save());
}

TEST(ShardDigestCache, DefaultPlace) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string saved_xdg = xdg ? xdg : "", saved_home = home ? home : "";
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  ::setenv("HOME", "/h", 1);
  EXPECT_EQ(default_shard_digest_cache_path(), "/x/cache/k3/shard-digests");
  ::setenv("XDG_CACHE_HOME", "relative/cache", 1);  // not absolute: ignored, as the XDG rule says
  EXPECT_EQ(default_shard_digest_cache_path(), "/h/.cache/k3/shard-digests");
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(default_shard_digest_cache_path(), "/h/.cache/k3/shard-digests");
  ::unsetenv("HOME");
  EXPECT_EQ(default_shard_digest_cache_path(), "");
  if (xdg) ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  if (home) ::setenv("HOME", saved_home.c_str(), 1);
}
