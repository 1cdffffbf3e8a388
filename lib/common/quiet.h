// --quiet: nothing on stderr but errors. The tools and the library write
// their plans, progress and summaries to stderr (fd 2); in quiet mode fd 2
// is pointed at /dev/null and the one-line error run_tool prints goes to a
// saved copy of the original stderr, so no message needs to know about it.
#pragma once

namespace k3 {

// The key messages name quiet mode by (common/setting_spelling.h; the tools: --quiet).
inline constexpr const char* kQuietSetting = "quiet";

// Idempotent. Throws k3::Error(kIo) when /dev/null cannot be opened.
void enter_quiet_mode();

// Where errors go: 2, or the saved stderr in quiet mode.
int error_fd();

}  // namespace k3
