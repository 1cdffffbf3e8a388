// The sequence states of recent requests, kept so a request whose rendered
// ids extend a kept state's ids continues from it (SPEC section 5's prefix
// rule, as k3-chat does within one process): an agent's next turn prefills
// only its new messages. Keyed by the ids a state holds (evaluated, then
// pending).
//
// States live in RAM within `ram_bytes`. With a directory (`dir`), each
// state is also written there as a state file (state/continuation.h, atomic,
// created exclusively) as soon as it is kept, by a writer thread of its own
// (StateSpiller: the engine thread does not wait on the disk), from the kept
// state itself: it is shared and immutable (a request continues from a copy,
// Session::rollback), so no copy is made to write it. Past `ram_bytes` the
// least recently used states leave RAM, their files staying, and are read
// back when a request needs them (waiting for that one write if it is still
// under way); past `max_files` states out of RAM the least recently used
// one's file is deleted. Without a directory an evicted state is dropped.
// Used by the engine thread only (no locking); the counters are read by
// /metrics through ServeMetrics (publish).
//
// A state whose write is still under way when it leaves RAM still holds
// that RAM: it counts against `ram_bytes` until the write ends (`leaving`),
// and when only such states are over the limit the engine thread waits for
// the oldest write (the disk is behind the states kept). So the kept states
// hold at most `ram_bytes` once keep() returns, and the memory plan counts
// nothing beside them (--keep-mb).
//
// A prompt cache (`persistent`, k3-serve --prompt-cache) is a directory that
// outlives the server (serve/prompt_cache_dir.h): the files are named by the
// ids they hold, the files of earlier runs are indexed at start-up and
// continued from like the others, none is removed at exit, and past
// `disk_bytes` the least recently used files are deleted.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "engine/session.h"
#include "model/config.h"
#include "serve/serve_metrics.h"
#include "serve/state_spiller.h"
#include "state/continuation.h"

namespace k3::serve {

struct CacheOptions {
  uint64_t ram_bytes = 512ull << 20;
  std::string dir;  // empty: a state past ram_bytes is dropped
  size_t max_files = 64;
  // Tests only: called on the writer thread before each state file is written.
  std::function<void(const std::string&)> before_write;
  bool persistent = false;  // `dir` is a prompt cache: files named by their ids, kept across runs
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
  // Makes the kept states leave RAM until `bytes` more fit within
  // ram_bytes: states a pass keeps within it (Model::step_rows) are held
  // from their layer on, before keep() takes them, and count among the
  // kept states while the pass runs.
  void make_room_for(uint64_t bytes);

  size_t states_in_ram() const;
  size_t states_on_disk() const;
  uint64_t ram_bytes() const { return ram_used_; }
  uint64_t disk_bytes() const;
  // The gauges and the prompt cache's counters, for /metrics.
  void publish(ServeMetrics& metrics) const;

  static uint64_t bytes_of(const Session::SavePoint& point);
  // bytes_of the state `rows` rows past `state` (a pass's keep within it):
  // the same KDA states, as many more MLA rows and ids, a logits row.
  static uint64_t bytes_after(const ModelConfig& config, const SequenceState& state, size_t rows);

 private:
  struct Entry {
    std::vector<int32_t> ids;
    bool in_ram = false;
    bool leaving = false;                             // in RAM until its file's write ends, then out
    std::shared_ptr<const Session::SavePoint> point;  // when in_ram (the writer may share it)
    std::string file;                                 // spilled, or in the prompt cache ("": none)
    std::shared_ptr<StateSpiller::Write> write;       // the file's write (it may still be under way)
    uint64_t bytes = 0;                               // in RAM
    uint64_t file_bytes = 0;                          // of the file
  };
  using EntryIt = std::list<Entry>::iterator;
  void make_room(uint64_t incoming = 0);
  // A state leaving RAM whose write ended: out of RAM with its file, or
  // forgotten (the write failed). Returns the next entry.
  EntryIt settle(EntryIt it);
  // Settles every leaving state whose write ended; forgets files whose write failed.
  void settle_writes();
  // Takes the entry out of RAM and forgets it.
  EntryIt drop(EntryIt it);
  void trim_disk();
  // Writes the entry's state into `dir` (the writer shares it: no copy).
  void write_through(Entry& e);
  // Reads the entry's file back into `session`; false when it is not the state kept under its ids.
  bool restore_file(Entry& e, Session& session);
  // Waits for the entry's file to be written (if it is under way), then removes it.
  static void remove_file(Entry& e);

  ModelIdentity model_;
  CacheOptions options_;
  std::list<Entry> entries_;  // most recently used first
  uint64_t ram_used_ = 0;
  uint64_t files_written_ = 0;             // --cache-dir's files, for their names
  uint64_t disk_hits_ = 0, disk_ids_ = 0;  // requests continued from prompt cache files, and their ids
  StateSpiller spiller_;                   // declared last: its writes end before the entries go
};

}  // namespace k3::serve
