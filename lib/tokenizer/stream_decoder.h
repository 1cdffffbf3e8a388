// Turns a stream of token bytes into UTF-8 text as tokens arrive.
//
// A token may end in the middle of a character (byte-level BPE), so the bytes
// of an incomplete trailing sequence are held back until a later token
// completes them. Whatever is written equals utf8::replace_invalid() of all
// bytes pushed so far, split at different points: feeding one token at a
// time gives exactly the whole-sequence decode.
#pragma once

#include <string>
#include <string_view>

namespace k3 {

class StreamDecoder {
 public:
  // Appends to `out` all text that is final once `bytes` are added.
  void push(std::string_view bytes, std::string& out);
  // End of stream: a held-back incomplete sequence becomes one U+FFFD.
  void finish(std::string& out);
  // Bytes held back waiting for more (0..3).
  size_t pending() const { return pending_.size(); }

 private:
  std::string pending_;  // a valid but incomplete sequence prefix
};

}  // namespace k3
