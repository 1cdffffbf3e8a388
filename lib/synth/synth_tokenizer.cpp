#include "synth/synth_tokenizer.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/json_writer.h"
#include "synth/synth_random.h"

namespace k3 {

namespace {

const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
std::string base64(const std::string& in) {
  std::string o;
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint8_t)in[i] << 16 | (uint8_t)in[i + 1] << 8 | (uint8_t)in[i + 2];
    o += kB64[v >> 18];
    o += kB64[(v >> 12) & 63];
    o += kB64[(v >> 6) & 63];
    o += kB64[v & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = (uint8_t)in[i] << 16;
    o += kB64[v >> 18];
    o += kB64[(v >> 12) & 63];
    o += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t)in[i] << 16 | (uint8_t)in[i + 1] << 8;
    o += kB64[v >> 18];
    o += kB64[(v >> 12) & 63];
    o += kB64[(v >> 6) & 63];
    o += '=';
  }
  return o;
}

}  // namespace

std::string synth_tiktoken_model(int ordinary_tokens, uint64_t seed) {
  std::vector<std::string> toks;
  std::unordered_set<std::string> seen;
  toks.reserve(ordinary_tokens);
  for (int b = 0; b < 256 && (int)toks.size() < ordinary_tokens; ++b) {
    toks.emplace_back(1, static_cast<char>(b));
    seen.insert(toks.back());
  }
  // Printable ASCII pieces merge first so that ordinary text tokenizes into
  // multi-byte tokens, as it would with a trained vocabulary.
  uint64_t st = seed ^ 0x746F6B656E697A65ull;
  while ((int)toks.size() < ordinary_tokens) {
    const size_t n = toks.size();
    const std::string& a = toks[splitmix(st) % n];
    const std::string& b = toks[32 + splitmix(st) % std::min<size_t>(n - 32, 95 + n / 8)];
    std::string c = a + b;
    if (c.size() > 16 || seen.count(c)) continue;
    seen.insert(c);
    toks.push_back(std::move(c));
  }
  std::string out;
  for (size_t r = 0; r < toks.size(); ++r) out += base64(toks[r]) + " " + std::to_string(r) + "\n";
  return out;
}

std::string synth_tokenizer_config_json(int vocab_size) {
  const int base = vocab_size - 256;
  const std::vector<std::pair<int, const char*>> named = {{0, "[BOS]"},
                                                          {1, "[EOS]"},
                                                          {2, "<|end_of_msg|>"},
                                                          {3, "<|open|>"},
                                                          {4, "<|close|>"},
                                                          {5, "<|sep|>"},
                                                          {6, "[start_header_id]"},
                                                          {7, "[end_header_id]"},
                                                          {9, "[EOT]"},
                                                          {18, "<|media_begin|>"},
                                                          {19, "<|media_content|>"},
                                                          {20, "<|media_end|>"},
                                                          {21, "<|media_pad|>"},
                                                          {254, "[UNK]"},
                                                          {255, "[PAD]"}};
  std::ostringstream o;
  o << "{\n  \"added_tokens_decoder\": {\n";
  for (size_t i = 0; i < named.size(); ++i) {
    const bool special = !(named[i].first >= 3 && named[i].first <= 5);
    o << "    \"" << base + named[i].first << "\": {\"content\": " << json_string(named[i].second)
      << ", \"lstrip\": false, \"normalized\": false, \"rstrip\": false, \"single_word\": false, "
         "\"special\": "
      << (special ? "true" : "false") << "}" << (i + 1 < named.size() ? "," : "") << "\n";
  }
  o << "  },\n"
    << "  \"additional_special_tokens\": [\"<|end_of_msg|>\"],\n"
    << "  \"bos_token\": \"[BOS]\",\n  \"clean_up_tokenization_spaces\": false,\n"
    << "  \"eos_token\": \"[EOS]\",\n  \"extra_special_tokens\": {},\n"
    << "  \"model_max_length\": 1000000000000000019884624838656,\n"
    << "  \"pad_token\": \"[PAD]\",\n  \"tokenizer_class\": \"TikTokenTokenizer\",\n"
    << "  \"unk_token\": \"[UNK]\",\n"
    << "  \"auto_map\": {\"AutoTokenizer\": [\"tokenization_kimi.TikTokenTokenizer\", null]}\n}\n";
  return o.str();
}

}  // namespace k3
