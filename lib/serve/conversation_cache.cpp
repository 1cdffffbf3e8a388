#include "serve/conversation_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "common/error.h"
#include "engine/prefix_reuse.h"
#include "serve/kept_state.h"

namespace k3::serve {

namespace {

std::vector<int32_t> ids_of(const Session::SavePoint& p) {
  std::vector<int32_t> ids = p.state.tokens;
  ids.insert(ids.end(), p.pending.begin(), p.pending.end());
  return ids;
}

}  // namespace

ConversationCache::ConversationCache(ModelIdentity model, CacheOptions options)
    : model_(model), options_(std::move(options)), spiller_(std::move(model), options_.before_write) {}

ConversationCache::~ConversationCache() {
  for (Entry& e : entries_) remove_file(e);
}

void ConversationCache::remove_file(Entry& e) {
  if (e.file.empty()) return;
  if (e.write) e.write->wait();
  ::unlink(e.file.c_str());
}

uint64_t ConversationCache::bytes_of(const Session::SavePoint& p) {
  uint64_t floats = p.row.size();
  for (const LayerState& l : p.state.layers)
    floats += l.kda.S.size() + l.kda.conv_q.size() + l.kda.conv_k.size() + l.kda.conv_v.size() + l.mla.latent.size();
  return 4 * (floats + p.state.tokens.size() + p.pending.size());
}

size_t ConversationCache::states_in_ram() const {
  return static_cast<size_t>(
      std::count_if(entries_.begin(), entries_.end(), [](const Entry& e) { return e.file.empty(); }));
}
size_t ConversationCache::states_on_disk() const { return entries_.size() - states_in_ram(); }

size_t ConversationCache::restore_longest(const std::vector<int32_t>& prompt, Session& session) {
  const auto best = longest_prefix_state(entries_.begin(), entries_.end(), prompt,
                                         [](const Entry& e) { return std::span<const int32_t>(e.ids); });
  if (best == entries_.end()) {
    session.reset();
    return 0;
  }
  entries_.splice(entries_.begin(), entries_, best);  // most recently used
  Entry& e = entries_.front();
  if (e.file.empty()) {
    session.rollback(e.point);  // a copy: the kept state stays for other requests
  } else {
    // A file that was not written, cannot be read, or is not the state kept
    // under these ids (kept_state.h: replaced by another conversation's):
    // forget it and evaluate from scratch.
    std::optional<ConversationState> kept;
    try {
      if (!e.write || e.write->wait()) kept = read_kept_state(e.file, model_, e.ids);
    } catch (const std::exception&) {  // no memory for it: the same
    }
    if (!kept) {
      ::unlink(e.file.c_str());
      entries_.pop_front();
      session.reset();
      return 0;
    }
    session.restore(std::move(*kept));
  }
  return e.ids.size();
}

void ConversationCache::keep(Session::SavePoint point) {
  std::vector<int32_t> ids = ids_of(point);
  if (ids.empty()) return;
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->ids == ids) {
      if (it->file.empty()) ram_used_ -= it->bytes;
      else remove_file(*it);
      entries_.erase(it);
      break;
    }
  point.logged_rows = 0;  // the server keeps no logits log
  Entry e;
  e.ids = std::move(ids);
  e.bytes = bytes_of(point);
  e.point = std::move(point);
  ram_used_ += e.bytes;
  entries_.push_front(std::move(e));
  make_room();
}

void ConversationCache::make_room() {
  // Least recently used in RAM first: spill (or drop) until within budget.
  for (auto it = entries_.end(); ram_used_ > options_.ram_bytes && it != entries_.begin();) {
    --it;
    if (!it->file.empty()) continue;
    ram_used_ -= it->bytes;
    if (options_.dir.empty()) {
      it = entries_.erase(it);
      continue;
    }
    const std::string path =
        options_.dir + "/k3-serve-" + std::to_string(::getpid()) + "-" + std::to_string(++files_written_) + ".k3state";
    it->point.logged_rows = 0;
    it->write = spiller_.spill(path, std::move(it->point));
    it->point = {};
    it->file = path;
  }
  // A write that failed (a full disk) loses that state, never a request.
  for (auto it = entries_.begin(); it != entries_.end();)
    it = it->write && it->write->failed() ? entries_.erase(it) : std::next(it);
  // Past max_files: the least recently used file goes.
  size_t files = states_on_disk();
  for (auto it = entries_.end(); files > options_.max_files && it != entries_.begin();) {
    --it;
    if (it->file.empty()) continue;
    remove_file(*it);
    it = entries_.erase(it);
    --files;
  }
}

}  // namespace k3::serve
