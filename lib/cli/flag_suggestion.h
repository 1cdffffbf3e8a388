// "did you mean --gen?" for a mistyped flag: the known long flag nearest to
// the unknown one by edit distance, when it is near enough to be a typo.
#pragma once

#include <string>
#include <vector>

namespace k3::cli {

// Levenshtein distance (insert, delete, substitute: each 1).
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `typed`, or "" when none is within
// max(2, typed.size() / 3) edits (so "--gem" finds "--gen" but "--colour"
// suggests nothing among unrelated flags); failing that, the longest
// candidate of at least 4 letters that `typed` starts with, so a flag
// spelled out or misspelled past its short name finds it ("--temprature"
// and "--temperature" find "--temp").
std::string closest_flag(const std::string& typed, const std::vector<std::string>& candidates);

}  // namespace k3::cli
