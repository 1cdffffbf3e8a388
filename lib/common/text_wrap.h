// Text wrapped at word boundaries to a width (a terminal's columns), for
// help that should fit the window it is shown in rather than a width fixed
// in the source.
#pragma once

#include <string>
#include <string_view>

namespace k3 {

// `text`'s words (runs of non-spaces; its spaces and line ends are not
// kept) on lines of at most `width` columns, each but the first starting
// with `indent` spaces, every line ending in '\n'. Greedy: a line takes
// every word that fits. A word longer than a line stands on a line of its
// own. Columns are counted in bytes (the text is ASCII).
std::string wrap_words(std::string_view text, size_t width, size_t indent = 0);

}  // namespace k3
