#include "gpu/spirv_denorm_preserve.h"

#include <cstring>
#include <string>

namespace k3 {
namespace {

constexpr uint32_t kOpExtension = 10, kOpExecutionMode = 16, kOpCapability = 17;
constexpr size_t kHeaderWords = 5;
constexpr const char* kFloatControls = "SPV_KHR_float_controls";

// Calls f(opcode, first operand word, operand count) for each instruction
// after the header; stops at a malformed length.
template <class F>
void for_each_instruction(const std::vector<uint32_t>& words, F f) {
  for (size_t i = kHeaderWords; i < words.size();) {
    const uint32_t count = words[i] >> 16;
    if (count == 0 || i + count > words.size()) return;
    f(words[i] & 0xffff, i, count);
    i += count;
  }
}

bool is_denorm_preserve_32(const std::vector<uint32_t>& words, uint32_t op, size_t at, uint32_t count) {
  // OpExecutionMode %entry DenormPreserve 32
  return op == kOpExecutionMode && count == 4 && words[at + 2] == kSpirvDenormPreserve && words[at + 3] == 32;
}

bool is_float_controls_extension(const std::vector<uint32_t>& words, uint32_t op, size_t at, uint32_t count) {
  if (op != kOpExtension) return false;
  const size_t bytes = (count - 1) * sizeof(uint32_t);
  std::string name(bytes, '\0');
  std::memcpy(name.data(), &words[at + 1], bytes);
  return std::strcmp(name.c_str(), kFloatControls) == 0;
}

}  // namespace

bool spirv_preserves_f32_denorms(const std::vector<uint32_t>& words) {
  bool found = false;
  for_each_instruction(words, [&](uint32_t op, size_t at, uint32_t count) {
    found = found || is_denorm_preserve_32(words, op, at, count);
  });
  return found;
}

std::vector<uint32_t> spirv_without_denorm_preserve(const std::vector<uint32_t>& words) {
  if (words.size() < kHeaderWords) return words;
  std::vector<uint32_t> out(words.begin(), words.begin() + kHeaderWords);
  size_t kept_to = kHeaderWords;
  for_each_instruction(words, [&](uint32_t op, size_t at, uint32_t count) {
    const bool drop = is_denorm_preserve_32(words, op, at, count) ||
                      (op == kOpCapability && count == 2 && words[at + 1] == kSpirvCapabilityDenormPreserve) ||
                      is_float_controls_extension(words, op, at, count);
    if (!drop) out.insert(out.end(), words.begin() + at, words.begin() + at + count);
    kept_to = at + count;
  });
  // Whatever a malformed length left unread stays as it was.
  out.insert(out.end(), words.begin() + kept_to, words.end());
  return out;
}

}  // namespace k3
