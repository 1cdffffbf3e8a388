#include "chat_state_setup.h"

#include <cstdio>

#include "chat/chat_state.h"
#include "cli/manifest_digests.h"
#include "common/byte_format.h"
#include "common/json_writer.h"
#include "common/tool_main.h"
#include "state/shard_digest_cache.h"

namespace k3 {

std::optional<ModelIdentity> chat_state_identity(const ModelConfig& config, const Checkpoint& checkpoint) {
  const ShardDigests known = manifest_shard_digests(checkpoint.dir());
  // Shards the digest cache remembers unchanged cost nothing to tell apart.
  ShardDigestCache cache(default_shard_digest_cache_path());
  uint64_t unknown = 0;
  for (const ShardInfo& s : checkpoint.shards()) {
    if (known && !known(s.path).empty()) continue;
    const std::optional<ShardFileKey> key = shard_file_key(s.path);
    if (key && !cache.find(*key).empty()) continue;
    unknown += s.file_size;
  }
  if (unknown > kChatFingerprintReadLimit) {
    std::fprintf(stderr,
                 "%s: no model state is kept beside the history: telling these weights apart would read %s of "
                 "shards no download manifest vouches for at every start (k3-fetch-verify verify %s records "
                 "one); a resumed chat evaluates its conversation again\n",
                 tool_name(), format_bytes(unknown).c_str(), checkpoint.dir().c_str());
    return std::nullopt;
  }
  // The digests and the cache already read above, not read again
  // (state_model_identity would): same identity as k3-forward's and k3-serve's.
  return ModelIdentity::of(config, checkpoint, known, &cache);
}

void resume_chat_state(ChatSession& chat, ChatLoopOptions& loop, const std::string& history_path,
                       const ModelIdentity& identity) {
  loop.state_path = chat_state_path(history_path);
  loop.identity = &identity;
  std::string note;
  load_chat_state(chat, loop.state_path, identity, note);
  if (!note.empty()) std::fprintf(stderr, "%s: %s\n", tool_name(), note.c_str());
}

std::string chat_stats_json(const std::vector<TurnIds>& turns) {
  const TurnIds last = turns.empty() ? TurnIds{} : turns.back();
  JsonWriter w;  // one line: a member of --stats-json's indented object
  w.begin_object().key("reused_ids").value(last.reused).key("prefilled_ids").value(last.prefilled);
  w.key("turns").begin_array();
  for (const TurnIds& t : turns)
    w.begin_object().key("reused_ids").value(t.reused).key("prefilled_ids").value(t.prefilled).end_object();
  w.end_array().end_object();
  return "  " + json_string("chat") + ": " + w.take();
}

}  // namespace k3
