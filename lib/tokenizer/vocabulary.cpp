#include "tokenizer/vocabulary.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "common/error.h"
#include "common/file.h"

namespace k3 {

namespace {

[[noreturn]] void bad(const std::string& msg) { throw Error(ExitCode::kBadModel, msg); }

// Standard base64 alphabet -> 6-bit value; 0xFF = not in the alphabet.
struct Base64Table {
  uint8_t v[256];
  constexpr Base64Table() : v() {
    for (int i = 0; i < 256; ++i) v[i] = 0xFF;
    const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) v[static_cast<uint8_t>(a[i])] = static_cast<uint8_t>(i);
  }
};
constexpr Base64Table kBase64;

// Decodes padded base64 `in` and appends the bytes to out; false if malformed.
bool base64_append(std::string_view in, std::string& out) {
  size_t n = in.size();
  if (n == 0 || n % 4 != 0) return false;
  size_t pad = in[n - 1] == '=' ? (in[n - 2] == '=' ? 2 : 1) : 0;
  const auto* p = reinterpret_cast<const uint8_t*>(in.data());
  size_t full = (n - (pad ? 4 : 0)) / 4;
  for (size_t q = 0; q < full; ++q, p += 4) {
    uint8_t a = kBase64.v[p[0]], b = kBase64.v[p[1]], c = kBase64.v[p[2]], d = kBase64.v[p[3]];
    if ((a | b | c | d) & 0xC0) return false;
    uint32_t w = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6) | d;
    char bytes[3] = {char(w >> 16), char(w >> 8), char(w)};
    out.append(bytes, 3);
  }
  if (pad) {
    uint8_t a = kBase64.v[p[0]], b = kBase64.v[p[1]];
    uint8_t c = pad == 1 ? kBase64.v[p[2]] : 0;
    if ((a | b | c) & 0xC0) return false;
    uint32_t w = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6);
    out.push_back(char(w >> 16));
    if (pad == 1) out.push_back(char(w >> 8));
  }
  return true;
}

// One read into one buffer: the real tiktoken.model is a few MB and load
// time matters (every k3-tokenize / k3-detok run pays it).
std::string read_whole_file(const std::string& path) {
  File f = File::open_read(path);
  if (f.size() > kMaxWholeReadBytes)
    throw Error(ExitCode::kBadModel, path + ": is " + std::to_string(f.size() >> 20) +
                                         " MiB, far more than any vocabulary file; is it the right file?");
  std::string data(f.size(), '\0');
  f.pread_exact(data.data(), data.size(), 0);
  return data;
}

// 1-based line of `text` that holds rank r (blank lines hold none).
uint64_t line_of_rank(std::string_view text, uint32_t r) {
  uint64_t line = 0, seen = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    ++line;
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    bool blank = eol == pos || (eol == pos + 1 && text[pos] == '\r');
    if (!blank && seen++ == r) return line;
    pos = eol + 1;
  }
  return line;
}

void check_every_byte_is_a_token(const Vocabulary& v, const std::string& model_name) {
  for (int b = 0; b < 256; ++b) {
    char c = static_cast<char>(b);
    if (v.rank(&c, 1) == Vocabulary::kNoToken) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      bad(model_name + ": the single byte " + hex + " is not a token (byte-level BPE needs all 256)");
    }
  }
}

// What tokenizer_config.json says of the special tokens.
struct TokenizerConfig {
  std::vector<std::pair<uint64_t, std::string>> added;  // added_tokens_decoder: id, name
  std::string bos, eos;
  bool has_bos = false, has_eos = false;
};

// On-demand parsing: tokenizer_config.json carries numbers such as
// model_max_length = 1e30 written as an integer, which a DOM parse rejects;
// values we do not read are skipped, never converted.
TokenizerConfig parse_tokenizer_config(std::string_view config, const std::string& config_name) {
  TokenizerConfig cfg;
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string padded(config);
    simdjson::ondemand::document doc = parser.iterate(padded);
    // A token name: a string or {"content": string}.
    auto content = [&](simdjson::ondemand::value val, std::string& out, const std::string& what) {
      if (val.type() == simdjson::ondemand::json_type::string) {
        out = std::string(std::string_view(val.get_string()));
        return;
      }
      if (val.type() == simdjson::ondemand::json_type::object) {
        for (auto f : val.get_object()) {
          if (std::string_view(f.unescaped_key()) == "content") {
            out = std::string(std::string_view(f.value().get_string()));
            return;
          }
        }
      }
      bad(config_name + ": " + what + " is neither a string nor {\"content\": string}");
    };
    for (auto field : doc.get_object()) {
      std::string_view key = field.unescaped_key();
      if (key == "added_tokens_decoder") {
        for (auto entry : field.value().get_object()) {
          std::string id_text(std::string_view(entry.unescaped_key()));
          uint64_t id = 0;
          auto [end, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
          if (ec != std::errc() || end != id_text.data() + id_text.size())
            bad(config_name + ": added_tokens_decoder key \"" + id_text + "\" is not a token id");
          std::string name;
          content(entry.value(), name, "added_tokens_decoder[\"" + id_text + "\"]");
          cfg.added.emplace_back(id, std::move(name));
        }
      } else if (key == "bos_token" || key == "eos_token") {
        simdjson::ondemand::value val = field.value();
        if (val.is_null()) continue;
        bool bos = key == "bos_token";
        content(val, bos ? cfg.bos : cfg.eos, std::string(key));
        (bos ? cfg.has_bos : cfg.has_eos) = true;
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    bad(config_name + ": not valid JSON (" + e.what() + ")");
  }
  return cfg;
}

// The id of bos_token or eos_token's name: a special token, or a base token
// (Vocabulary::kNoToken when the config names none).
TokenId named_token(const Vocabulary& v, bool present, const std::string& name, const char* key,
                    const std::string& config_name) {
  if (!present) return Vocabulary::kNoToken;
  TokenId id = v.special_id(name);
  if (id == Vocabulary::kNoToken) id = v.rank(name);  // a base token may serve too
  if (id == Vocabulary::kNoToken) bad(config_name + ": \"" + key + "\" is \"" + name + "\", which is not a token");
  return id;
}

}  // namespace

Vocabulary Vocabulary::load(const std::string& dir) {
  if (!file_exists(dir)) bad(dir + ": tokenizer directory not found (give the model directory with --tok)");
  std::string model_path = path_join(dir, "tiktoken.model");
  std::string config_path = path_join(dir, "tokenizer_config.json");
  std::string model = read_whole_file(model_path);
  std::string config = read_text_file(config_path);
  return parse(model, config, model_path, config_path);
}

Vocabulary Vocabulary::parse(std::string_view text, std::string_view config, const std::string& model_name,
                             const std::string& config_name) {
  Vocabulary v;
  // Every line is ~10 bytes of base64 + rank for ~6 token bytes.
  v.blob_.reserve(text.size() / 2);
  v.offsets_.reserve(text.size() / 10 + 2);
  v.offsets_.push_back(0);

  size_t pos = 0;
  uint64_t line_no = 0;
  while (pos < text.size()) {
    ++line_no;
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;  // the reference skips blank lines too
    auto where = [&] { return model_name + " line " + std::to_string(line_no) + ": "; };
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || line.find(' ', sp + 1) != std::string_view::npos)
      bad(where() + "expected \"<base64 bytes> <rank>\"");
    std::string_view b64 = line.substr(0, sp), num = line.substr(sp + 1);
    uint64_t rank = 0;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), rank);
    if (ec != std::errc() || end != num.data() + num.size() || num.empty())
      bad(where() + "rank \"" + std::string(num) + "\" is not a non-negative integer");
    uint64_t expected = v.offsets_.size() - 1;
    if (rank < expected)
      bad(where() + "duplicate rank " + std::to_string(rank) + " (ranks must be 0, 1, 2, ... in order)");
    if (rank > expected)
      bad(where() + "rank " + std::to_string(rank) + " leaves a gap: expected rank " + std::to_string(expected));
    if (rank >= 0xFFFFFFFFull - kNumSpecialTokens) bad(where() + "too many ranks");
    if (!base64_append(b64, v.blob_)) bad(where() + "\"" + std::string(b64) + "\" is not valid base64 token bytes");
    if (v.blob_.size() > 0xFFFFFFF0ull) bad(where() + "token bytes exceed 4 GiB");
    v.offsets_.push_back(static_cast<uint32_t>(v.blob_.size()));
  }
  v.num_ranks_ = static_cast<uint32_t>(v.offsets_.size() - 1);
  if (v.num_ranks_ == 0) bad(model_name + ": no tokens (empty file?)");
  uint32_t first = 0, second = 0;
  if (!v.build_index(first, second))
    bad(model_name + " line " + std::to_string(line_of_rank(text, second)) + ": rank " + std::to_string(second) +
        " has the same bytes as rank " + std::to_string(first));

  // Byte-level BPE starts from single bytes, so every byte must be a token.
  check_every_byte_is_a_token(v, model_name);

  const TokenizerConfig cfg = parse_tokenizer_config(config, config_name);

  v.special_names_.resize(kNumSpecialTokens);
  std::vector<bool> named(kNumSpecialTokens, false);
  for (auto& [id, name] : cfg.added) {
    if (id < v.num_ranks_ || id >= v.num_ranks_ + uint64_t(kNumSpecialTokens))
      bad(config_name + ": added_tokens_decoder names id " + std::to_string(id) + ", outside the special ids " +
          std::to_string(v.num_ranks_) + ".." + std::to_string(v.size() - 1) + " that follow the " +
          std::to_string(v.num_ranks_) + " ranks of " + model_name + " (is this the matching tokenizer_config.json?)");
    if (name.empty())
      bad(config_name + ": added_tokens_decoder names id " + std::to_string(id) + " with an empty string");
    v.special_names_[id - v.num_ranks_] = std::move(name);
    named[id - v.num_ranks_] = true;
  }
  for (uint32_t i = 0; i < kNumSpecialTokens; ++i) {
    if (!named[i]) v.special_names_[i] = "<|reserved_token_" + std::to_string(v.num_ranks_ + i) + "|>";
    auto [it, inserted] = v.special_ids_.emplace(v.special_names_[i], v.num_ranks_ + i);
    if (!inserted)
      bad(config_name + ": special token name \"" + v.special_names_[i] + "\" is used by ids " +
          std::to_string(it->second) + " and " + std::to_string(v.num_ranks_ + i));
  }

  v.bos_id_ = named_token(v, cfg.has_bos, cfg.bos, "bos_token", config_name);
  v.eos_id_ = named_token(v, cfg.has_eos, cfg.eos, "eos_token", config_name);
  return v;
}

bool Vocabulary::build_index(uint32_t& first, uint32_t& second) {
  uint64_t cap = 16;
  while (cap < uint64_t(num_ranks_) * 2) cap <<= 1;
  slots_.assign(cap, Slot{0, 0});
  mask_ = cap - 1;
  // Hash everything first (sequential), then insert with the target slot of
  // a later rank prefetched: the table is a few MB and each insert would
  // otherwise wait for a cache miss.
  std::vector<uint64_t> hashes(num_ranks_);
  for (uint32_t r = 0; r < num_ranks_; ++r)
    hashes[r] = XXH3_64bits(blob_.data() + offsets_[r], offsets_[r + 1] - offsets_[r]);
  constexpr uint32_t kAhead = 16;
  for (uint32_t r = 0; r < num_ranks_; ++r) {
    if (r + kAhead < num_ranks_) __builtin_prefetch(&slots_[hashes[r + kAhead] & mask_], 1);
    const char* p = blob_.data() + offsets_[r];
    size_t n = offsets_[r + 1] - offsets_[r];
    uint32_t tag = static_cast<uint32_t>(hashes[r] >> 32);
    for (uint64_t i = hashes[r] & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.rank_plus_one == 0) {
        s = Slot{r + 1, tag};
        break;
      }
      if (s.tag == tag) {
        uint32_t o = s.rank_plus_one - 1;
        if (offsets_[o + 1] - offsets_[o] == n && std::memcmp(blob_.data() + offsets_[o], p, n) == 0) {
          first = o;
          second = r;
          return false;
        }
      }
    }
  }
  return true;
}

TokenId Vocabulary::special_id(std::string_view name) const {
  auto it = special_ids_.find(name);
  return it == special_ids_.end() ? kNoToken : it->second;
}

}  // namespace k3
