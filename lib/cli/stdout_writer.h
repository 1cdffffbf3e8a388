// The cli layer: what every k3 tool's command line shares (options, stdout,
// interrupts, token ids on pipes), so the tools stay thin front ends.
//
// stdout_writer: output that must arrive as soon as it exists (ids while they
// are generated, text while it is decoded), with a failed write (a closed
// pipe, a full disk) reported as exit 5 instead of being lost.
#pragma once

#include <cstdint>
#include <string_view>

namespace k3 {

// Writes all of `bytes` to file descriptor 1 (retrying short writes and
// EINTR); anything buffered in stdio is flushed first so output keeps its
// order. Throws Error(kIo) when the write fails.
void write_all_stdout(std::string_view bytes);

// One token id and a newline, written at once (a pipe reader sees it now).
void write_token_id_line(int32_t id);

}  // namespace k3
