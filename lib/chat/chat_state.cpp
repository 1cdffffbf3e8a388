#include "chat/chat_state.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/atomic_file_writer.h"
#include "common/error.h"
#include "common/file.h"

namespace k3 {

std::string chat_state_path(const std::string& history_path) { return history_path + ".k3s"; }

size_t load_chat_state(ChatSession& chat, const std::string& path, const ModelIdentity& identity, std::string& note) {
  note.clear();
  if (!file_exists(path)) return 0;
  const std::string fallback = "; the conversation is evaluated again";
  ConversationState saved;
  try {
    saved = load_conversation(path, identity);
  } catch (const Error& e) {
    if (e.code() != ExitCode::kBadInput && e.code() != ExitCode::kBadModel && e.code() != ExitCode::kIo) throw;
    note = e.what() + fallback;
    return 0;
  }
  std::vector<int32_t> ids = saved.sequence.tokens;
  ids.insert(ids.end(), saved.pending.begin(), saved.pending.end());
  const std::vector<int32_t> next = chat.next_prompt_start();
  if (ids.empty() || ids.size() > next.size() || !std::equal(ids.begin(), ids.end(), next.begin())) {
    note = path + ": holds " + std::to_string(ids.size()) + " ids that are not the start of the conversation in the " +
           "history (edited, or other chat settings)" + fallback;
    return 0;
  }
  if (chat.options().context && ids.size() >= chat.options().context) {
    note = path + ": " + std::to_string(ids.size()) + " positions, more than the planned context (--ctx)" + fallback;
    return 0;
  }
  chat.session().restore_reusable(std::move(saved));
  return ids.size();
}

void save_chat_state(ChatSession& chat, const std::string& path, const ModelIdentity& identity) {
  // A link or device planted at the name is refused, not written through.
  check_output_path(path, OutputPolicy::kRegularFile);
  if (chat.session().save_reusable(path, identity, chat.next_prompt_start()) > 0) return;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    throw Error(ExitCode::kIo, "cannot remove " + path + ": " + std::strerror(errno));
}

}  // namespace k3
