#include "synth/synth_tokenizer.h"

#include <algorithm>
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
  JsonWriter w(2);
  w.begin_object();
  w.key("added_tokens_decoder").begin_object();
  for (const auto& [offset, content] : named) {
    w.key(std::to_string(base + offset)).inline_next().begin_object();
    w.key("content").value(content);
    for (const char* flag : {"lstrip", "normalized", "rstrip", "single_word"}) w.key(flag).value(false);
    w.key("special").value(!(offset >= 3 && offset <= 5));
    w.end_object();
  }
  w.end_object();
  w.key("additional_special_tokens").inline_next().begin_array().value("<|end_of_msg|>").end_array();
  w.key("bos_token").value("[BOS]");
  w.key("clean_up_tokenization_spaces").value(false);
  w.key("eos_token").value("[EOS]");
  w.key("extra_special_tokens").begin_object().end_object();
  w.key("model_max_length").integer_text("1000000000000000019884624838656");  // Python's int(1e30)
  w.key("pad_token").value("[PAD]");
  w.key("tokenizer_class").value("TikTokenTokenizer");
  w.key("unk_token").value("[UNK]");
  w.key("auto_map").inline_next().begin_object();
  w.key("AutoTokenizer").begin_array().value("tokenization_kimi.TikTokenTokenizer").null().end_array();
  w.end_object();
  w.end_object();
  return w.take() + "\n";
}

}  // namespace k3
