#include "serve/conversation_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "common/byte_format.h"
#include "common/error.h"
#include "engine/prefix_reuse.h"
#include "serve/kept_state.h"
#include "serve/prompt_cache_dir.h"

namespace k3::serve {

namespace {

std::vector<int32_t> ids_of(const Session::SavePoint& p) {
  std::vector<int32_t> ids = p.state.tokens;
  ids.insert(ids.end(), p.pending.begin(), p.pending.end());
  return ids;
}

// The size of the file StateSpiller writes for `p` (no sampler section; the
// last logits only when nothing is pending).
uint64_t file_bytes_of(const ModelIdentity& model, const Session::SavePoint& p) {
  StateFileContents c;
  c.positions = p.state.tokens.size();
  c.pending_ids = p.pending.size();
  c.has_logits = p.pending.empty() && !p.state.tokens.empty() && !p.row.empty();
  return state_file_bytes(model.geometry, c);
}

}  // namespace

ConversationCache::ConversationCache(ModelIdentity model, CacheOptions options)
    : model_(model), options_(std::move(options)), spiller_(std::move(model), options_.before_write) {
  if (!options_.persistent) return;
  for (PromptCacheFile& f : index_prompt_cache(options_.dir, model_)) {
    Entry e;
    e.ids = std::move(f.ids);
    e.file = std::move(f.path);
    e.file_bytes = f.bytes;
    entries_.push_back(std::move(e));
  }
  trim_disk();  // a smaller limit than the last run's
  std::fprintf(stderr, "k3-serve: prompt cache %s: %zu states of this model (%s)\n", options_.dir.c_str(),
               entries_.size(), format_bytes(disk_bytes()).c_str());
}

ConversationCache::~ConversationCache() {
  if (options_.persistent) return;  // the spiller finishes its writes; the files are the next run's
  for (Entry& e : entries_) remove_file(e);
}

void ConversationCache::remove_file(Entry& e) {
  if (e.file.empty()) return;
  if (e.write) e.write->wait();
  ::unlink(e.file.c_str());
  e.file.clear();
  e.write.reset();
  e.file_bytes = 0;
}

uint64_t ConversationCache::bytes_of(const Session::SavePoint& p) {
  uint64_t floats = p.row.size();
  for (const LayerState& l : p.state.layers)
    floats += l.kda.S.size() + l.kda.conv_q.size() + l.kda.conv_k.size() + l.kda.conv_v.size() + l.mla.latent.size();
  return 4 * (floats + p.state.tokens.size() + p.pending.size());
}

uint64_t ConversationCache::bytes_after(const ModelConfig& c, const SequenceState& state, size_t rows) {
  const uint64_t positions = static_cast<uint64_t>(state.positions) + rows;
  uint64_t floats = static_cast<uint64_t>(c.vocab_size) + state.tokens.size() + rows;
  for (size_t i = 0; i < state.layers.size(); ++i) {
    const KdaState& k = state.layers[i].kda;
    if (c.is_kda_layer(static_cast<int>(i))) floats += k.S.size() + k.conv_q.size() + k.conv_k.size() + k.conv_v.size();
    else floats += positions * static_cast<uint64_t>(c.kv_lora_rank + c.qk_rope_head_dim);
  }
  return 4 * floats;
}

size_t ConversationCache::states_in_ram() const {
  return static_cast<size_t>(std::count_if(entries_.begin(), entries_.end(), [](const Entry& e) { return e.in_ram; }));
}
size_t ConversationCache::states_on_disk() const {
  return static_cast<size_t>(
      std::count_if(entries_.begin(), entries_.end(), [](const Entry& e) { return !e.file.empty(); }));
}
uint64_t ConversationCache::disk_bytes() const {
  uint64_t n = 0;
  for (const Entry& e : entries_) n += e.file.empty() ? 0 : e.file_bytes;
  return n;
}

void ConversationCache::publish(ServeMetrics& m) const {
  m.kept_states_ram = states_in_ram();
  m.kept_states_disk = states_on_disk();
  m.kept_bytes_ram = ram_used_;
  m.kept_bytes_disk = disk_bytes();
  m.prompt_cache_hits = disk_hits_;
  m.prompt_cache_ids = disk_ids_;
}

size_t ConversationCache::restore_longest(const std::vector<int32_t>& prompt, Session& session) {
  const auto best = longest_prefix_state(entries_.begin(), entries_.end(), prompt,
                                         [](const Entry& e) { return std::span<const int32_t>(e.ids); });
  if (best == entries_.end()) {
    session.reset();
    return 0;
  }
  entries_.splice(entries_.begin(), entries_, best);  // most recently used
  Entry& e = entries_.front();
  if (e.in_ram) {
    session.rollback(*e.point);  // a copy: the kept state stays for other requests
  } else if (!restore_file(e, session)) {
    remove_file(e);
    entries_.pop_front();
    session.reset();
    return 0;
  }
  return e.ids.size();
}

bool ConversationCache::restore_file(Entry& e, Session& session) {
  // A file that was not written, cannot be read, or is not the state kept
  // under these ids (kept_state.h: replaced by another conversation's, or
  // damaged in the prompt cache): forget it and evaluate from scratch.
  std::optional<ConversationState> kept;
  try {
    if (!e.write || e.write->wait()) kept = read_kept_state(e.file, model_, e.ids);
  } catch (const std::exception&) {  // no memory for it: the same
  }
  if (!kept) {
    if (options_.persistent)
      std::fprintf(stderr, "k3-serve: prompt cache: ignoring %s: not the state it names (read whole)\n",
                   e.file.c_str());
    return false;
  }
  session.restore(std::move(*kept));
  if (options_.persistent) {
    touch_prompt_cache_file(e.file);
    ++disk_hits_;
    disk_ids_ += e.ids.size();
  }
  return true;
}

void ConversationCache::keep(Session::SavePoint point) {
  std::vector<int32_t> ids = ids_of(point);
  if (ids.empty()) return;
  point.logged_rows = 0;  // the server keeps no logits log
  Entry e;
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->ids == ids) {
      // The same ids, the same state: its file stays, and so does its state
      // where it is in RAM (the writer may be writing from it).
      e.file = std::move(it->file);
      e.write = std::move(it->write);
      e.file_bytes = it->file_bytes;
      if (it->in_ram) {
        e.point = std::move(it->point);
        e.bytes = it->bytes;  // still counted in ram_used_
      }
      entries_.erase(it);
      break;
    }
  e.ids = std::move(ids);
  if (!e.point) {
    e.bytes = bytes_of(point);
    e.point = std::make_shared<const Session::SavePoint>(std::move(point));
    ram_used_ += e.bytes;
  }
  e.in_ram = true;
  if (!options_.dir.empty() && e.file.empty()) write_through(e);
  entries_.push_front(std::move(e));
  make_room();
}

void ConversationCache::write_through(Entry& e) {
  e.file = options_.persistent ? prompt_cache_path(options_.dir, model_, e.ids)
                               : options_.dir + "/k3-serve-" + std::to_string(::getpid()) + "-" +
                                     std::to_string(++files_written_) + ".k3state";
  e.file_bytes = file_bytes_of(model_, *e.point);
  e.write = spiller_.spill(e.file, e.point);
}

ConversationCache::EntryIt ConversationCache::drop(EntryIt it) {
  if (it->in_ram) ram_used_ -= it->bytes;
  return entries_.erase(it);
}

ConversationCache::EntryIt ConversationCache::settle(EntryIt it) {
  if (it->write && it->write->failed()) {
    it->file.clear();
    it->write.reset();
    return drop(it);
  }
  ram_used_ -= it->bytes;
  it->in_ram = it->leaving = false;
  it->point.reset();  // freed here: the writer let go of it when its write ended
  return std::next(it);
}

void ConversationCache::settle_writes() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->write && it->write->done()) {
      if (it->leaving) {
        it = settle(it);
        continue;
      }
      if (it->write->failed()) {  // a full disk loses that file, never a request: the state stays in RAM
        it->file.clear();
        it->write.reset();
      }
    }
    ++it;
  }
}

void ConversationCache::make_room_for(uint64_t bytes) { make_room(bytes); }

void ConversationCache::make_room(uint64_t incoming) {
  settle_writes();
  // Least recently used in RAM first: leave RAM (to its file, or dropped) until within budget.
  const auto over = [&] { return ram_used_ + incoming > options_.ram_bytes; };
  for (auto it = entries_.end(); over() && it != entries_.begin();) {
    --it;
    if (!it->in_ram || it->leaving) continue;
    if (it->file.empty()) {
      it = drop(it);
    } else if (it->write && !it->write->done()) {
      it->leaving = true;  // its RAM is free once written
    } else {
      it = settle(it);
    }
  }
  // Over the limit still: only states on their way to disk are left to go.
  for (auto it = entries_.end(); over() && it != entries_.begin();) {
    --it;
    if (!it->leaving) continue;
    it->write->wait();  // the disk is behind the states kept
    it = settle(it);
  }
  trim_disk();
}

void ConversationCache::trim_disk() {
  // Past the limit (the prompt cache's bytes, else max_files of states out
  // of RAM): the least recently used file goes. A --cache-dir state in RAM
  // keeps its file (written when kept), so it leaves RAM without a write.
  const auto out_of_ram = [&] {
    return static_cast<size_t>(
        std::count_if(entries_.begin(), entries_.end(), [](const Entry& e) { return !e.file.empty() && !e.in_ram; }));
  };
  const auto over = [&] {
    return options_.persistent ? disk_bytes() > options_.disk_bytes : out_of_ram() > options_.max_files;
  };
  for (auto it = entries_.end(); it != entries_.begin() && over();) {
    --it;
    if (it->file.empty()) continue;
    remove_file(*it);
    if (!it->in_ram || it->leaving) it = drop(it);
  }
}

}  // namespace k3::serve
