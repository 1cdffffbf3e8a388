// The logits of every evaluated position, one row each, in evaluation order:
// what `k3-forward --logits FILE` writes (safetensors, tensor "logits" F32
// [rows, vocab]). Rows come from prompt evaluation and from each generated
// token that was evaluated; rows evaluated and then rolled back (rejected
// speculative drafts) are never added, so the file is the same whatever path
// computed it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace k3 {

class LogitsLog {
 public:
  LogitsLog(bool enabled, size_t vocab) : enabled_(enabled), vocab_(vocab) {}

  bool enabled() const { return enabled_; }
  size_t rows() const { return vocab_ ? data_.size() / vocab_ : 0; }

  // Appends `n` rows of `vocab` floats (nothing when disabled).
  void add(const float* rows, size_t n);
  // Drops rows past the first `n` (rolling back to a save point).
  void truncate(size_t n);

  // Writes the log atomically to `path`.
  void write(const std::string& path) const;

 private:
  bool enabled_;
  size_t vocab_;
  std::vector<float> data_;
};

}  // namespace k3
