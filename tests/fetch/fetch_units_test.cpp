// Pieces of the downloader checked without a network: digests against
// published test vectors, hub listing parsing, Link pagination, path safety,
// glob selection and the manifest round trip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/error.h"
#include "fetch/fetch_manifest.h"
#include "fetch/glob_filter.h"
#include "fetch/http_get.h"
#include "fetch/hub_listing.h"
#include "io/file_digest.h"

namespace k3 {
namespace {

TEST(FileDigest, KnownVectors) {
  FileDigest d(3);
  d.update("abc", 3);
  DigestResult r = d.finish();
  // FIPS 180-2 example.
  EXPECT_EQ(r.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // `printf abc | git hash-object --stdin`
  EXPECT_EQ(r.git_sha1, "f2ba8f84ab5c1bce84a7b441cb1959cfc7093b7f");
  EXPECT_EQ(r.bytes, 3u);

  FileDigest empty;
  DigestResult e = empty.finish();
  EXPECT_EQ(e.sha256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // XXH3-128 of no input, seed 0, canonical form (xxhsum -H2 /dev/null).
  EXPECT_EQ(e.xxh3_128, "99aa06d3014798d86001c324468d497f");
  EXPECT_TRUE(e.git_sha1.empty());
}

TEST(FileDigest, ChunkingDoesNotMatter) {
  std::string data(1 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 2654435761u) >> 13);
  FileDigest whole(static_cast<int64_t>(data.size()));
  whole.update(data.data(), data.size());
  DigestResult a = whole.finish();
  FileDigest pieces(static_cast<int64_t>(data.size()));
  for (size_t off = 0; off < data.size(); off += 7919)
    pieces.update(data.data() + off, std::min<size_t>(7919, data.size() - off));
  DigestResult b = pieces.finish();
  EXPECT_EQ(a.sha256, b.sha256);
  EXPECT_EQ(a.xxh3_128, b.xxh3_128);
  EXPECT_EQ(a.git_sha1, b.git_sha1);
}

TEST(HubListing, ParsesTreePage) {
  const std::string page = R"([
    {"type":"directory","oid":"0000000000000000000000000000000000000000","size":0,"path":"sub"},
    {"type":"file","oid":"457df09c611ee15dec69a58fff9e168e3e896cdb","size":3175,"path":"config.json"},
    {"type":"file","oid":"aaaa","size":16000000000,"path":"model-00001-of-00096.safetensors",
     "lfs":{"oid":"9ee4e7895bf3fdddf74054b8b74a6617617e2058f3a3b61167e87525adbfca9d","size":16000000000,"pointerSize":135}}
  ])";
  std::vector<HubFile> files;
  parse_tree_page(page, "test", &files);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].path, "config.json");
  EXPECT_FALSE(files[0].lfs);
  EXPECT_EQ(files[0].git_oid, "457df09c611ee15dec69a58fff9e168e3e896cdb");
  EXPECT_TRUE(files[1].lfs);
  EXPECT_EQ(files[1].size, 16000000000ull);  // > 4 GB: 64-bit sizes
  EXPECT_EQ(files[1].sha256, "9ee4e7895bf3fdddf74054b8b74a6617617e2058f3a3b61167e87525adbfca9d");
}

TEST(HubListing, RefusesUnsafePathsAndSizeDisagreement) {
  std::vector<HubFile> files;
  EXPECT_THROW(parse_tree_page(R"([{"type":"file","oid":"a","size":1,"path":"../evil"}])", "t", &files), Error);
  EXPECT_THROW(parse_tree_page(R"([{"type":"file","oid":"a","size":5,"path":"x",
                                   "lfs":{"oid":"ab","size":6}}])",
                               "t", &files),
               Error);
  EXPECT_THROW(parse_tree_page(R"({"error":"nope"})", "t", &files), Error);
  EXPECT_TRUE(is_safe_repo_path("a/b.safetensors"));
  EXPECT_FALSE(is_safe_repo_path("/etc/passwd"));
  EXPECT_FALSE(is_safe_repo_path("a//b"));
  EXPECT_FALSE(is_safe_repo_path("a/./b"));
  EXPECT_FALSE(is_safe_repo_path("a/.."));
}

TEST(HttpHelpers, LinkRetryAfterAndEncoding) {
  EXPECT_EQ(parse_link_next(R"(<https://hf.co/api/models/a/b/tree/x?cursor=abc&recursive=true>; rel="next")"),
            "https://hf.co/api/models/a/b/tree/x?cursor=abc&recursive=true");
  EXPECT_EQ(parse_link_next(R"(<https://p>; rel="prev", <https://n>; rel="next")"), "https://n");
  EXPECT_EQ(parse_link_next(R"(<https://p>; rel="prev")"), "");
  EXPECT_EQ(parse_link_next(""), "");
  EXPECT_EQ(parse_retry_after("7"), 7.0);
  EXPECT_LT(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0);
  EXPECT_LT(parse_retry_after(""), 0);
  EXPECT_EQ(url_encode_path("dir/a b+c.json"), "dir/a%20b%2Bc.json");
  EXPECT_EQ(hub_resolve_url("https://huggingface.co/", "moonshotai/Kimi-K3", "abc123", "x y/z.bin"),
            "https://huggingface.co/moonshotai/Kimi-K3/resolve/abc123/x%20y/z.bin");
}

TEST(GlobFilter, IncludeExclude) {
  GlobFilter all({}, {});
  EXPECT_TRUE(all.selects("anything/at/all"));
  GlobFilter meta({"*.json", "tiktoken.model"}, {});
  EXPECT_TRUE(meta.selects("config.json"));
  EXPECT_TRUE(meta.selects("sub/dir/x.json"));  // '*' crosses '/', as in the hub client
  EXPECT_TRUE(meta.selects("tiktoken.model"));
  EXPECT_FALSE(meta.selects("model-00001-of-00096.safetensors"));
  GlobFilter shards({"model-*.safetensors"}, {"model-0009[4-6]-*"});
  EXPECT_TRUE(shards.selects("model-00001-of-00096.safetensors"));
  EXPECT_FALSE(shards.selects("model-00095-of-00096.safetensors"));
}

TEST(FetchManifest, RoundTrip) {
  std::string dir = (std::filesystem::temp_directory_path() / ("k3-manifest-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  FetchManifest m;
  m.repo = "moonshotai/Kimi-K3";
  m.revision = "main";
  m.commit = "0123456789abcdef0123456789abcdef01234567";
  m.endpoint = "https://huggingface.co";
  ManifestFile a;
  a.path = "z \"quoted\".safetensors";
  a.size = 16000000000ull;
  a.lfs = true;
  a.sha256 = std::string(64, 'a');
  a.xxh3_128 = std::string(32, 'b');
  a.complete = true;
  a.mtime_ns = 1795978122552218443LL;
  ManifestFile b;
  b.path = "config.json";
  b.size = 10;
  b.git_oid = std::string(40, 'c');
  m.upsert(a);
  m.upsert(b);
  ASSERT_EQ(m.files[0].path, "config.json");  // kept sorted
  const std::string p = fetch_manifest_path(dir);
  write_fetch_manifest(p, m);
  FetchManifest r = read_fetch_manifest(p);
  EXPECT_EQ(r.commit, m.commit);
  ASSERT_EQ(r.files.size(), 2u);
  const ManifestFile* ra = r.find(a.path);
  ASSERT_NE(ra, nullptr);
  EXPECT_EQ(ra->size, a.size);
  EXPECT_TRUE(ra->lfs);
  EXPECT_TRUE(ra->complete);
  EXPECT_EQ(ra->sha256, a.sha256);
  EXPECT_EQ(ra->xxh3_128, a.xxh3_128);
  EXPECT_EQ(ra->mtime_ns, a.mtime_ns);
  EXPECT_FALSE(r.find("config.json")->complete);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace k3

TEST(HttpHelpers, UrlOriginDecidesWhereTheTokenGoes) {
  EXPECT_EQ(k3::url_origin("https://huggingface.co/api/models/x"), "https://huggingface.co:443");
  EXPECT_EQ(k3::url_origin("https://huggingface.co"), "https://huggingface.co:443");
  EXPECT_EQ(k3::url_origin("HTTPS://HuggingFace.co:443/x?y"), "https://huggingface.co:443");
  EXPECT_EQ(k3::url_origin("http://127.0.0.1:8080/a"), "http://127.0.0.1:8080");
  EXPECT_EQ(k3::url_origin("http://[::1]/a"), "http://[::1]:80");
  EXPECT_EQ(k3::url_origin("http://[::1]:81/a"), "http://[::1]:81");
  // Another port, scheme or host is another origin; userinfo is not the host.
  EXPECT_NE(k3::url_origin("http://127.0.0.1:8081/a"), k3::url_origin("http://127.0.0.1:8080"));
  EXPECT_NE(k3::url_origin("http://huggingface.co/a"), k3::url_origin("https://huggingface.co"));
  EXPECT_NE(k3::url_origin("https://huggingface.co.evil.example/a"), k3::url_origin("https://huggingface.co"));
  EXPECT_EQ(k3::url_origin("https://huggingface.co@evil.example/a"), "https://evil.example:443");
  EXPECT_EQ(k3::url_origin("/relative/path"), "");
  EXPECT_EQ(k3::url_origin(""), "");
}
