// Repetition, frequency and presence penalties: lowering the logits of ids
// the sequence already holds, as llama.cpp (repeat_penalty,
// frequency_penalty, presence_penalty over the last repeat_last_n ids) and
// the OpenAI API (frequency_penalty, presence_penalty) define them.
//
// For each distinct id with c > 0 occurrences among the last `last_n` ids of
// the sequence (prompt included; -1: the whole sequence), in double and
// rounded to float once:
//   l = l > 0 ? l / repetition : l * repetition     (CTRL's repetition penalty)
//   l = l - c * frequency - presence
// Ids not in the window keep their logits bit for bit, and with every
// penalty at its neutral value nothing is changed at all, so greedy and
// seeded runs are unchanged when no penalty is given.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace k3 {

struct PenaltyParams {
  double repetition = 1.0;  // 1: off; > 0 (above 1 discourages repeats)
  double frequency = 0.0;   // 0: off; [-2, 2] as OpenAI allows
  double presence = 0.0;    // 0: off; [-2, 2]
  int32_t last_n = 64;      // ids looked back at; -1: the whole sequence; 0: none

  bool active() const { return last_n != 0 && (repetition != 1.0 || frequency != 0.0 || presence != 0.0); }
};

// Throws k3::Error(kUsage) naming the flag when a value is out of range.
void validate_penalty_params(const PenaltyParams& params);

// Applies the penalties for `sequence` (the ids before the one to choose)
// to `logits` [vocab] in place. Ids outside the vocabulary are ignored.
void apply_penalties(float* logits, int64_t vocab, std::span<const int32_t> sequence, const PenaltyParams& params);

}  // namespace k3
