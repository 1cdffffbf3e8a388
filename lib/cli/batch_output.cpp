#include "cli/batch_output.h"

#include "cli/stdout_writer.h"

namespace k3 {

void OrderedLines::finish(size_t line) {
  done_[line] = true;
  while (next_ < done_.size() && done_[next_]) {
    std::string text;
    for (size_t i = 0; i < ids_[next_].size(); ++i) {
      if (i) text.push_back(' ');
      text += std::to_string(ids_[next_][i]);
    }
    text.push_back('\n');
    write_all_stdout(text);
    ids_[next_].clear();
    ++next_;
  }
}

}  // namespace k3
