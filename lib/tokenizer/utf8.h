// UTF-8 validation and the replacement rule every k3 text output follows.
//
// Invalid input is replaced with U+FFFD one "maximal subpart" at a time
// (Unicode chapter 3, "U+FFFD Substitution of Maximal Subparts"), which is
// what Python's bytes.decode("utf-8", errors="replace") does: a truncated but
// otherwise valid prefix of a sequence becomes ONE U+FFFD, a byte that can
// start no valid sequence becomes one U+FFFD by itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace k3::utf8 {

inline constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD
inline constexpr size_t kNotFound = static_cast<size_t>(-1);

// What the bytes at the start of a buffer hold.
struct Sequence {
  enum Kind : uint8_t {
    kValid,       // `length` bytes form one well-formed code point
    kInvalid,     // `length` bytes are one maximal invalid subpart (one U+FFFD)
    kIncomplete,  // all `length` bytes (the rest of the buffer) are a valid
                  // prefix of a longer sequence: more bytes may complete it
  };
  Kind kind;
  uint8_t length;
};

// Classifies the sequence starting at p[0]; `avail` >= 1 bytes are readable.
Sequence classify(const uint8_t* p, size_t avail);

// Byte offset of the first ill-formed (or truncated) sequence, kNotFound if
// `s` is entirely well-formed UTF-8.
size_t find_invalid(std::string_view s);

// Appends `s` to `out` with every maximal invalid subpart (including a
// truncated sequence at the very end) replaced by U+FFFD.
void append_replacing_invalid(std::string_view s, std::string& out);
std::string replace_invalid(std::string_view s);

// Decodes the code point at p (must be well-formed); sets `len` to its size.
inline char32_t decode_valid(const uint8_t* p, size_t& len) {
  uint8_t b = p[0];
  if (b < 0x80) {
    len = 1;
    return b;
  }
  if (b < 0xE0) {
    len = 2;
    return (char32_t(b & 0x1F) << 6) | (p[1] & 0x3F);
  }
  if (b < 0xF0) {
    len = 3;
    return (char32_t(b & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  }
  len = 4;
  return (char32_t(b & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) | (char32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
}

}  // namespace k3::utf8
