// Speed figures on status lines, one convention for every tool (k3-forward's
// progress, decode and summary lines, k3-chat's --stats, k3-serve's log;
// docs/terminal.md "Figures"):
//   - generating: seconds per generated token, "0.125 s/token": the decode
//     seconds divided by the tokens generated in them (speculation keeps
//     several per weight pass: still per token);
//   - reading a prompt: tokens per second, "512 tokens/s";
// each with three significant digits and no exponent, so figures of the
// same run printed in two places are the same text.
#pragma once

#include <cstdint>
#include <string>

namespace k3 {

// `v` with three significant digits, fixed point ("13.7", "0.125", "0.00123",
// "512", "1234"); "0" for 0, negative or non-finite values.
std::string three_digits(double v);

// "0.125 s/token"; "- s/token" when no token was generated.
std::string seconds_per_token(double seconds, int64_t tokens);

// "512 tokens/s"; "- tokens/s" when no time was measured.
std::string tokens_per_second(double seconds, int64_t tokens);

}  // namespace k3
