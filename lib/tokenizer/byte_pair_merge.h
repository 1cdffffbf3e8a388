// Rank-ordered byte-pair merging of one pre-split piece, as tiktoken does:
// start from single bytes and repeatedly merge the adjacent pair whose
// concatenation has the lowest rank (the leftmost such pair on ties) until
// no adjacent pair is a token.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tokenizer/vocabulary.h"

namespace k3 {

// Appends the ids of `piece` (n bytes) to out. Short pieces use tiktoken's
// own scan (quadratic, tiny constants); long ones a heap with the same
// order, so a 25,000-byte run costs O(n log n) and gives the same ids.
void byte_pair_merge(const Vocabulary& vocab, const uint8_t* piece, size_t n, std::vector<TokenId>& out);

// The two strategies, exposed so tests can check they agree.
void byte_pair_merge_scan(const Vocabulary& vocab, const uint8_t* piece, size_t n, std::vector<TokenId>& out);
void byte_pair_merge_heap(const Vocabulary& vocab, const uint8_t* piece, size_t n, std::vector<TokenId>& out);

}  // namespace k3
