#include "tokenizer/tokenizer_eos.h"

#include <simdjson.h>

#include <charconv>

#include "common/error.h"
#include "common/file.h"

namespace k3 {

namespace {

// A token name: a string or {"content": string}; empty when neither.
std::string token_name(simdjson::ondemand::value v) {
  if (v.type() == simdjson::ondemand::json_type::string) return std::string(std::string_view(v.get_string()));
  if (v.type() == simdjson::ondemand::json_type::object)
    for (auto f : v.get_object())
      if (std::string_view(f.unescaped_key()) == "content")
        return std::string(std::string_view(f.value().get_string()));
  return {};
}

}  // namespace

TokenId tokenizer_eos_id(const std::string& dir) {
  const std::string path = path_join(dir, "tokenizer_config.json");
  if (!file_exists(path)) return Vocabulary::kNoToken;
  std::string eos;
  std::vector<std::pair<uint64_t, std::string>> added;
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string text(read_text_file(path));
    simdjson::ondemand::document doc = parser.iterate(text);
    // On-demand: values not read (model_max_length = 1e30 as an integer) are skipped.
    for (auto field : doc.get_object()) {
      std::string_view key = field.unescaped_key();
      if (key == "eos_token") {
        simdjson::ondemand::value v = field.value();
        if (!v.is_null()) eos = token_name(v);
      } else if (key == "added_tokens_decoder") {
        for (auto entry : field.value().get_object()) {
          std::string_view id_text = entry.unescaped_key();
          uint64_t id = 0;
          auto [end, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
          if (ec == std::errc() && end == id_text.data() + id_text.size())
            added.emplace_back(id, token_name(entry.value()));
        }
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    throw Error(ExitCode::kBadModel, path + ": not valid JSON (" + e.what() + ")");
  }
  if (eos.empty()) return Vocabulary::kNoToken;
  for (const auto& [id, name] : added)
    if (name == eos && id < Vocabulary::kNoToken) return static_cast<TokenId>(id);
  return Vocabulary::load(dir).eos_id();  // an ordinary token, or a reserved name: the full lookup
}

}  // namespace k3
