// The safetensors header reader and the checkpoint index, on the bundled
// tiny checkpoint and on deliberately damaged copies of its shards.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_index.h"
#include "checkpoint/safetensors.h"
#include "common/error.h"

namespace fs = std::filesystem;
using k3::Checkpoint;
using k3::Error;
using k3::ExitCode;

namespace {
const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

fs::path copy_tiny(const std::string& tag) {
  fs::path dst = fs::temp_directory_path() / ("k3-st-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(dst);
  fs::copy(kTiny, dst);
  for (auto& e : fs::directory_iterator(dst)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  return dst;
}

std::string error_of(const std::function<void()>& f, ExitCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Checkpoint, OpensTinyAndFindsEveryIndexedTensor) {
  Checkpoint c = Checkpoint::open(kTiny);
  EXPECT_EQ(c.shards().size(), 5u);
  EXPECT_EQ(c.index_total_size(), 4473280u);
  const auto& emb = c.at("language_model.model.embed_tokens.weight");
  EXPECT_EQ(emb.info->dtype, k3::DType::kBF16);
  ASSERT_EQ(emb.info->shape.size(), 2u);
  EXPECT_EQ(emb.info->shape[0], 8448u);
  EXPECT_EQ(emb.info->shape[1], 64u);
  uint64_t sum = 0;
  for (auto& [name, loc] : c.tensors()) sum += loc.info->nbytes;
  EXPECT_EQ(sum, c.index_total_size());
  EXPECT_EQ(c.find("no.such.tensor"), nullptr);
}

TEST(Checkpoint, TruncatedShardIsRejectedNamingTheTensor) {
  fs::path d = copy_tiny("trunc");
  fs::path shard = d / "model-00003-of-00005.safetensors";
  fs::resize_file(shard, fs::file_size(shard) - 100);
  ExitCode code{};
  std::string msg = error_of([&] { Checkpoint::open(d.string()); }, &code);
  EXPECT_EQ(code, ExitCode::kBadModel);
  EXPECT_NE(msg.find("model-00003-of-00005.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("past the end of the file"), std::string::npos) << msg;
  fs::remove_all(d);
}

TEST(Checkpoint, HeaderLengthPastFileIsRejected) {
  fs::path d = copy_tiny("hdr");
  fs::path shard = d / "model-00002-of-00005.safetensors";
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    unsigned char big[8] = {0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0};
    f.write(reinterpret_cast<char*>(big), 8);
  }
  std::string msg = error_of([&] { Checkpoint::open(d.string()); });
  EXPECT_NE(msg.find("exceeds the file size"), std::string::npos) << msg;
  fs::remove_all(d);
}

TEST(Checkpoint, MissingShardIsRejected) {
  fs::path d = copy_tiny("missing");
  fs::remove(d / "model-00004-of-00005.safetensors");
  std::string msg = error_of([&] { Checkpoint::open(d.string()); });
  EXPECT_NE(msg.find("model-00004-of-00005.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
  fs::remove_all(d);
}

// The index is the authority on where a tensor lives: every entry agrees
// with the shard headers, a lookup of each name returns that entry, and a
// name the index moves to a shard whose header lacks it is refused.
TEST(Checkpoint, TableMatchesEveryShardHeaderAndTheIndex) {
  Checkpoint c = Checkpoint::open(kTiny);
  size_t from_headers = 0;
  for (size_t s = 0; s < c.shards().size(); ++s) {
    k3::SafetensorsHeader h = k3::read_safetensors_header(c.shards()[s].path);
    from_headers += h.tensors.size();
    for (const auto& [name, info] : h.tensors) {
      const k3::TensorLocation* loc = c.find(name);
      ASSERT_NE(loc, nullptr) << name;
      EXPECT_EQ(loc->shard, s) << name;
      EXPECT_EQ(loc->info->offset, info.offset) << name;
      EXPECT_EQ(loc->info->nbytes, info.nbytes) << name;
      EXPECT_EQ(loc->info->shape, info.shape) << name;
      EXPECT_EQ(loc->info->dtype, info.dtype) << name;
    }
  }
  EXPECT_EQ(c.tensor_count(), from_headers);
  size_t n = 0;
  for (const auto& [name, loc] : c.tensors()) {
    ASSERT_EQ(c.find(name), &loc) << name;
    EXPECT_EQ(loc.info->name, name);
    ++n;
  }
  EXPECT_EQ(n, c.tensor_count());
  EXPECT_EQ(c.find(""), nullptr);
  EXPECT_EQ(c.find("language_model.model.embed_tokens.weigh"), nullptr);

  fs::path d = copy_tiny("moved");
  const fs::path index = d / "model.safetensors.index.json";
  std::string text;
  {
    std::ifstream f(index);
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  const std::string entry = "\"language_model.model.norm.weight\": \"";
  size_t at = text.find(entry);
  ASSERT_NE(at, std::string::npos);
  at += entry.size();
  const size_t end = text.find('"', at);
  const std::string was = text.substr(at, end - at);
  const std::string other = was == "model-00001-of-00005.safetensors" ? "model-00002-of-00005.safetensors"
                                                                      : "model-00001-of-00005.safetensors";
  text.replace(at, end - at, other);
  {
    std::ofstream f(index, std::ios::trunc);
    f << text;
  }
  ExitCode code{};
  std::string msg = error_of([&] { Checkpoint::open(d.string()); }, &code);
  EXPECT_EQ(code, ExitCode::kBadModel);
  EXPECT_NE(msg.find(other), std::string::npos) << msg;
  EXPECT_NE(msg.find("'language_model.model.norm.weight' is listed in the index but not in this shard's header"),
            std::string::npos)
      << msg;
  fs::remove_all(d);
}

TEST(Safetensors, SizeMismatchAndUnknownDtypeAreRejected) {
  std::string msg = error_of(
      [] { k3::parse_safetensors_header("x", R"({"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,10]}})", 1000); });
  EXPECT_NE(msg.find("needs 12 bytes"), std::string::npos) << msg;
  msg = error_of(
      [] { k3::parse_safetensors_header("x", R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}})", 1000); });
  EXPECT_NE(msg.find("unknown dtype 'Q4'"), std::string::npos) << msg;
}

TEST(Safetensors, WriterRoundTrips) {
  std::string h = k3::make_safetensors_header({{"x", k3::DType::kF32, {3, 5}, 60}, {"y", k3::DType::kU8, {7}, 7}});
  ASSERT_EQ(h.size() % 8, 0u);
  auto parsed = k3::parse_safetensors_header("mem", h.substr(8), h.size() + 67);
  EXPECT_EQ(parsed.tensors.at("y").offset, h.size() + 60);
  EXPECT_EQ(parsed.tensors.at("x").shape_str(), "[3, 5]");
}

TEST(Safetensors, WriterEscapesEveryControlCharacterInNames) {
  // Names with quotes, backslashes and control bytes were once written with
  // only '"' and '\\' escaped: the header was not JSON.
  std::string odd = "a\"b\\c";
  for (char c = 1; c < 0x20; ++c) odd.push_back(c);
  std::string h = k3::make_safetensors_header({{odd, k3::DType::kF32, {2}, 8}, {"plain", k3::DType::kU8, {1}, 1}});
  auto parsed = k3::parse_safetensors_header("mem", h.substr(8), h.size() + 9);
  ASSERT_EQ(parsed.tensors.count(odd), 1u);
  EXPECT_EQ(parsed.tensors.at(odd).shape_str(), "[2]");
  EXPECT_EQ(parsed.tensors.at("plain").offset, h.size() + 8);
}

TEST(Safetensors, DuplicateNameIsRefused) {
  ExitCode code{};
  std::string msg = error_of(
      [] {
        k3::parse_safetensors_header("x.safetensors",
                                     R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                     R"("b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
                                     R"("a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                                     1000);
      },
      &code);
  EXPECT_EQ(code, ExitCode::kBadModel);
  EXPECT_NE(msg.find("x.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'a' is listed twice"), std::string::npos) << msg;
}

TEST(Safetensors, OverlappingDataOffsetsAreRefused) {
  // Partial overlap, listed out of file order.
  ExitCode code{};
  std::string msg = error_of(
      [] {
        k3::parse_safetensors_header("x",
                                     R"({"late":{"dtype":"U8","shape":[4],"data_offsets":[6,10]},)"
                                     R"("early":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})",
                                     1000);
      },
      &code);
  EXPECT_EQ(code, ExitCode::kBadModel);
  EXPECT_NE(msg.find("'early' [0, 8) and 'late' [6, 10) overlap"), std::string::npos) << msg;
  // One tensor inside another.
  msg = error_of([] {
    k3::parse_safetensors_header("x",
                                 R"({"big":{"dtype":"U8","shape":[16],"data_offsets":[0,16]},)"
                                 R"("mid":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})",
                                 1000);
  });
  EXPECT_NE(msg.find("overlap"), std::string::npos) << msg;
  // Adjacent tensors, empty tensors anywhere and gaps are fine.
  EXPECT_EQ(error_of([] {
              k3::parse_safetensors_header("x",
                                           R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                                           R"("e":{"dtype":"U8","shape":[0],"data_offsets":[2,2]},)"
                                           R"("b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]},)"
                                           R"("c":{"dtype":"U8","shape":[1],"data_offsets":[12,13]}})",
                                           1000);
            }),
            "");
}

TEST(Checkpoint, IndexListingATensorTwiceIsRefused) {
  fs::path d = copy_tiny("dupindex");
  const fs::path index = d / "model.safetensors.index.json";
  std::string text;
  {
    std::ifstream f(index);
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  const std::string wm = "\"weight_map\": {";
  size_t at = text.find(wm);
  ASSERT_NE(at, std::string::npos);
  text.insert(at + wm.size(), "\"language_model.model.norm.weight\": \"model-00001-of-00005.safetensors\", ");
  {
    std::ofstream f(index, std::ios::trunc);
    f << text;
  }
  for (auto open : {std::function<void()>([&] { Checkpoint::open(d.string()); }),
                    std::function<void()>([&] { k3::read_checkpoint_index(index.string()); })}) {
    ExitCode code{};
    std::string msg = error_of(open, &code);
    EXPECT_EQ(code, ExitCode::kBadModel);
    EXPECT_NE(msg.find("'language_model.model.norm.weight' is listed twice in weight_map"), std::string::npos) << msg;
  }
  fs::remove_all(d);
}
