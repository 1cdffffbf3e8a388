// The Kimi tokenizer's vocabulary: the ranks of tiktoken.model and the 256
// special tokens that follow them, named by tokenizer_config.json.
//
// tiktoken.model holds one "base64(bytes) rank" line per mergeable token;
// ordinary ids are the ranks. Special ids start right after the last rank;
// names come from tokenizer_config.json's added_tokens_decoder and every id
// it does not name is "<|reserved_token_N|>" (as the reference tokenizer
// builds them). Nothing about the specials is compiled into k3.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace k3 {

using TokenId = uint32_t;

class Vocabulary {
 public:
  // The reference tokenizer reserves this many special ids after the ranks.
  static constexpr uint32_t kNumSpecialTokens = 256;
  static constexpr TokenId kNoToken = 0xFFFFFFFFu;

  // Loads DIR/tiktoken.model and DIR/tokenizer_config.json. Throws
  // k3::Error(kBadModel) naming the file (and line) that is wrong.
  static Vocabulary load(const std::string& dir);
  // From already-read file contents; `*_name` only label error messages.
  static Vocabulary parse(std::string_view tiktoken_model, std::string_view tokenizer_config,
                          const std::string& model_name = "tiktoken.model",
                          const std::string& config_name = "tokenizer_config.json");

  uint32_t num_ranks() const { return num_ranks_; }
  uint32_t size() const { return num_ranks_ + kNumSpecialTokens; }
  bool is_special(TokenId id) const { return id >= num_ranks_ && id < size(); }

  // The bytes of token `id` (a special's bytes are its name). id < size().
  std::string_view bytes(TokenId id) const {
    if (id < num_ranks_) return std::string_view(blob_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]);
    return special_names_[id - num_ranks_];
  }

  // Rank of exactly these bytes, kNoToken if they are not one token.
  __attribute__((always_inline)) TokenId rank(const void* data, size_t n) const {
    // Inline: byte-pair merging asks this for every candidate pair.
    uint64_t h = XXH3_64bits(data, n);
    uint32_t tag = static_cast<uint32_t>(h >> 32);
    for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.rank_plus_one == 0) return kNoToken;
      if (s.tag == tag) {
        uint32_t r = s.rank_plus_one - 1;
        if (offsets_[r + 1] - offsets_[r] == n && std::memcmp(blob_.data() + offsets_[r], data, n) == 0) return r;
      }
    }
  }
  TokenId rank(std::string_view s) const { return rank(s.data(), s.size()); }

  // Special token id by name, kNoToken if none.
  TokenId special_id(std::string_view name) const;
  const std::vector<std::string>& special_names() const { return special_names_; }

  // tokenizer_config.json's bos_token / eos_token, resolved to ids
  // (kNoToken when the config names none).
  TokenId bos_id() const { return bos_id_; }
  TokenId eos_id() const { return eos_id_; }

 private:
  // Fills the lookup table; false (with the two ranks) if two ranks share bytes.
  bool build_index(uint32_t& first, uint32_t& second);

  uint32_t num_ranks_ = 0;
  std::string blob_;               // all token bytes, rank order
  std::vector<uint32_t> offsets_;  // num_ranks_ + 1 offsets into blob_
  // Open addressing with linear probing over a power-of-two table, at most
  // half full; `tag` (high hash bits) skips nearly every wasted compare.
  struct Slot {
    uint32_t rank_plus_one;  // 0 = empty
    uint32_t tag;
  };
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  std::vector<std::string> special_names_;
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return XXH3_64bits(s.data(), s.size()); }
  };
  std::unordered_map<std::string, TokenId, NameHash, std::equal_to<>> special_ids_;
  TokenId bos_id_ = kNoToken, eos_id_ = kNoToken;
};

}  // namespace k3
