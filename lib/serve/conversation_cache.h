// The sequence states of recent requests, kept so a request whose rendered
// ids extend a kept state's ids continues from it (SPEC section 5's prefix
// rule, as k3-chat does within one process): an agent's next turn prefills
// only its new messages. Keyed by the ids a state holds (evaluated, then
// pending).
//
// States live in RAM within `ram_bytes`; past that the least recently used
// ones are written as state files (state/continuation.h, atomic, created
// exclusively) into `dir` by a writer thread of their own (StateSpiller: the
// engine thread does not wait on the disk), and read back when a request
// needs them (waiting for that one write if it is still under way); past
// `max_files` the least recently used file is deleted. Without a directory
// an evicted state is dropped. Used by the engine thread only (no locking);
// the counters are read by /metrics through ServeMetrics.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "engine/session.h"
#include "serve/state_spiller.h"
#include "state/continuation.h"

namespace k3::serve {

struct CacheOptions {
  uint64_t ram_bytes = 512ull << 20;
  std::string dir;  // empty: no spilling
  size_t max_files = 64;
  // Tests only: called on the writer thread before each state file is written.
  std::function<void(const std::string&)> before_write;
};

class ConversationCache {
 public:
  ConversationCache(ModelIdentity model, CacheOptions options);
  ~ConversationCache();  // removes the state files it wrote
  ConversationCache(const ConversationCache&) = delete;
  ConversationCache& operator=(const ConversationCache&) = delete;

  // Puts the longest kept state whose ids are a prefix of `prompt` into
  // `session` and returns how many ids it holds; 0 (session reset) when none.
  size_t restore_longest(const std::vector<int32_t>& prompt, Session& session);
  // Keeps a state (a session's mark() or release()); replaces one with the same ids.
  void keep(Session::SavePoint point);

  size_t states_in_ram() const;
  size_t states_on_disk() const;
  uint64_t ram_bytes() const { return ram_used_; }

  static uint64_t bytes_of(const Session::SavePoint& point);

 private:
  struct Entry {
    std::vector<int32_t> ids;
    Session::SavePoint point;                    // in RAM when file is empty
    std::string file;                            // spilled
    std::shared_ptr<StateSpiller::Write> write;  // the file's write (it may still be under way)
    uint64_t bytes = 0;
  };
  void make_room();
  // Waits for the entry's file to be written (if it is under way), then removes it.
  static void remove_file(Entry& e);

  ModelIdentity model_;
  CacheOptions options_;
  std::list<Entry> entries_;  // most recently used first
  uint64_t ram_used_ = 0;
  uint64_t files_written_ = 0;
  StateSpiller spiller_;  // declared last: its writes end before the entries go
};

}  // namespace k3::serve
