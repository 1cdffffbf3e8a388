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
// the counters are read by /metrics through ServeMetrics (publish).
//
// A prompt cache (`persistent`, k3-serve --prompt-cache) is a directory that
// outlives the server (serve/prompt_cache_dir.h): every state kept is also
// written there as soon as it is kept (a copy, on the writer thread), the
// files of earlier runs are indexed at start-up and continued from like
// spilled ones, none is removed at exit, and past `disk_bytes` the least
// recently used files are deleted. A state leaving RAM then costs no write.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "engine/session.h"
#include "serve/serve_metrics.h"
#include "serve/state_spiller.h"
#include "state/continuation.h"

namespace k3::serve {

struct CacheOptions {
  uint64_t ram_bytes = 512ull << 20;
  std::string dir;  // empty: no spilling
  size_t max_files = 64;
  // Tests only: called on the writer thread before each state file is written.
  std::function<void(const std::string&)> before_write;
  bool persistent = false;  // `dir` is a prompt cache: written through, kept across runs
  uint64_t disk_bytes = 0;  // persistent: the most its files may hold
};

class ConversationCache {
 public:
  ConversationCache(ModelIdentity model, CacheOptions options);
  ~ConversationCache();  // removes the state files it spilled (a prompt cache's stay)
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
  uint64_t disk_bytes() const;
  // The gauges and the prompt cache's counters, for /metrics.
  void publish(ServeMetrics& metrics) const;

  static uint64_t bytes_of(const Session::SavePoint& point);

 private:
  struct Entry {
    std::vector<int32_t> ids;
    bool in_ram = false;
    Session::SavePoint point;                    // when in_ram
    std::string file;                            // spilled, or in the prompt cache ("": none)
    std::shared_ptr<StateSpiller::Write> write;  // the file's write (it may still be under way)
    uint64_t bytes = 0;                          // in RAM
    uint64_t file_bytes = 0;                     // of the file
  };
  void make_room();
  void trim_disk();
  // Writes a copy of the entry's state into the prompt cache.
  void write_through(Entry& e);
  // Reads the entry's file back into `session`; false when it is not the state kept under its ids.
  bool restore_file(Entry& e, Session& session);
  // Waits for the entry's file to be written (if it is under way), then removes it.
  static void remove_file(Entry& e);

  ModelIdentity model_;
  CacheOptions options_;
  std::list<Entry> entries_;  // most recently used first
  uint64_t ram_used_ = 0;
  uint64_t files_written_ = 0;
  uint64_t disk_hits_ = 0, disk_ids_ = 0;  // requests continued from prompt cache files, and their ids
  StateSpiller spiller_;                   // declared last: its writes end before the entries go
};

}  // namespace k3::serve
