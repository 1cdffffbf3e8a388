// Status lines on a terminal that other processes write text to as well.
//
// `k3-forward | k3-detok` puts the generated text and k3-forward's stderr on
// one terminal: k3-forward cannot know the cursor's column, and a line it
// rewrites in place ("\r...\e[K") would erase the text. So the live
// per-token progress goes where it cannot touch the text (the window title,
// or a line when stdout is a file nobody reads on the screen: see
// cli/decode_progress.h), and a status line printed after text may have been
// written starts with fresh_line(): it moves to the start of a new line only
// when the cursor is not already at the start of one.
#pragma once

#include <string>

namespace k3 {

// What to write to `fd` before a status line so it starts on a line of its
// own: nothing when fd is not a terminal (files and pipes are line-oriented
// already); on a terminal, a line's width of spaces then "\r\e[K". From
// column 0 the spaces fill the line and the cursor stays on it (the terminal
// wraps only when the next character comes), so "\r\e[K" leaves the screen
// as it was; from any other column they wrap to the next line, which "\r\e[K"
// clears. The spaces overwrite only the empty rest of the text's line.
std::string fresh_line(int fd);

// The width of the terminal on `fd` in columns (0 when not a terminal).
int terminal_columns(int fd);

// The escape that sets the terminal's window title to `title` (OSC 2), with
// control characters removed from it.
std::string title_sequence(const std::string& title);

// Waits until a reader has taken everything written to the pipe on `fd`
// (at most `max_ms` milliseconds; returns at once when fd is not a pipe), so
// a status line on stderr comes after the text a reader such as k3-detok
// prints from it.
void wait_for_pipe_reader(int fd, int max_ms);

}  // namespace k3
