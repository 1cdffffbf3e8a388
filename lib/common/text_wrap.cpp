#include "common/text_wrap.h"

namespace k3 {

std::string wrap_words(std::string_view text, size_t width, size_t indent) {
  std::string out, line;  // `line`: the words of the line being filled, without its indent
  size_t lead = 0;        // that line's indent: none on the first
  size_t pos = 0;
  while ((pos = text.find_first_not_of(" \t\r\n", pos)) != std::string_view::npos) {
    size_t stop = text.find_first_of(" \t\r\n", pos);
    if (stop == std::string_view::npos) stop = text.size();
    const std::string_view word = text.substr(pos, stop - pos);
    pos = stop;
    if (!line.empty() && lead + line.size() + 1 + word.size() > width) {
      out += std::string(lead, ' ') + line + "\n";
      line.clear();
      lead = indent;
    }
    if (!line.empty()) line += ' ';
    line += word;
  }
  if (!line.empty()) out += std::string(lead, ' ') + line + "\n";
  return out;
}

}  // namespace k3
