// k3-forward --batch output: one line of generated ids per prompt, in input
// order. A line is written when its sequence ends and every earlier line is
// out, so a reader (k3-detok --format=line) sees finished lines as early as
// the order allows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

class OrderedLines {
 public:
  explicit OrderedLines(size_t lines) : ids_(lines), done_(lines, false) {}
  void add(size_t line, int32_t id) { ids_[line].push_back(id); }
  // Marks `line` finished and writes every finished line not yet written
  // that has no unfinished line before it.
  void finish(size_t line);
  size_t written() const { return next_; }

 private:
  std::vector<std::vector<int32_t>> ids_;
  std::vector<bool> done_;
  size_t next_ = 0;
};

}  // namespace k3
