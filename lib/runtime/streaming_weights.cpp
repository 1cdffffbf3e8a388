#include "runtime/streaming_weights.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "common/file.h"
#include "model/tensor_manifest.h"
#include "model/weight_binding.h"

namespace k3 {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

inline float bf16_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

struct StreamingWeights::Section {
  const TrunkSection* ts = nullptr;
  bool pinned = false;
  AlignedBuffer buf;  // pinned bytes
  std::unordered_map<std::string, uint64_t> rel;  // tensor name -> offset from section start
  LayerWeights lw;
  HeadWeights hw;
};

struct StreamingWeights::StreamBuffer {
  AlignedBuffer buf;
  int unit = -1;
  uint64_t skip = 0;  // the unit's bytes start at buf + skip
  bool held = false;
  bool pending = false;  // a read was issued; `done` says whether it finished
  std::mutex mu;
  std::condition_variable cv;
  bool done = true;
  std::string error;
  LayerWeights lw;
  HeadWeights hw;
};

struct StreamingWeights::Slot {
  int64_t key = -1;
  int in_use = 0;
  uint64_t tick = 0;
  ExpertWeights w;
};

StreamingWeights::StreamingWeights(const ModelConfig& config, const Checkpoint& checkpoint,
                                   const std::string& trunk_dir, TrunkLayout layout, const MemoryPlan& plan,
                                   int io_threads)
    : config_(config),
      trunk_dir_(trunk_dir),
      layout_(std::move(layout)),
      experts_(config, checkpoint),
      io_(io_threads) {
  const auto t0 = Clock::now();
  if (layout_.compressed())
    throw Error(ExitCode::kBadModel, trunk_dir_ + ": a compressed trunk (k3-pack --compress) is not read by this "
                                                  "engine yet; pack the trunk without --compress");
  for (const ShardInfo& s : checkpoint.shards()) shard_files_.push_back(std::make_unique<DirectFile>(s.path));
  if (!trunk_dir_.empty()) trunk_file_ = std::make_unique<DirectFile>(path_join(trunk_dir_, "trunk.bin"));

  layer_section_.assign(config_.num_hidden_layers, -1);
  for (size_t s = 0; s < layout_.sections.size(); ++s) {
    auto sec = std::make_unique<Section>();
    sec->ts = &layout_.sections[s];
    for (const TrunkTensor& t : sec->ts->tensors) sec->rel[t.name] = t.offset - sec->ts->offset;
    const int layer = sec->ts->layer;
    if (layer >= 0 && layer < config_.num_hidden_layers) layer_section_[layer] = static_cast<int>(s);
    if (sec->ts->name == "head") head_section_ = static_cast<int>(s);
    if (sec->ts->name == "embedding") embed_section_ = static_cast<int>(s);
    sections_.push_back(std::move(sec));
  }
  for (int l = 0; l < config_.num_hidden_layers; ++l)
    if (layer_section_[l] < 0) throw Error(ExitCode::kBadModel, "the trunk has no section for layer " + std::to_string(l));
  if (head_section_ < 0 || embed_section_ < 0)
    throw Error(ExitCode::kBadModel, "the trunk lacks its embedding or head section (re-run k3-pack)");

  // Pinned sections: read once, verify, bind.
  for (int s : plan.pinned) {
    Section& sec = *sections_[s];
    sec.pinned = true;
    sec.buf = AlignedBuffer(sec.ts->length);
    if (trunk_file_) {
      io_.read_now({ReadEngine::Read{trunk_file_.get(), sec.ts->offset, sec.ts->length, sec.ts->length, sec.buf.data()}});
      if (XXH3_64bits(sec.buf.data(), sec.ts->length) != sec.ts->xxh3)
        throw Error(ExitCode::kBadModel, path_join(trunk_dir_, "trunk.bin") + ": section " + sec.ts->name +
                                             " does not match its hash in trunk.json (corrupted; run k3-pack --check, "
                                             "then re-run k3-pack)");
    } else {
      // No packed trunk: gather each tensor from its shard.
      for (const TrunkTensor& t : sec.ts->tensors) {
        const TensorLocation& loc = checkpoint.at(t.name);
        const DirectFile& f = *shard_files_[loc.shard];
        const uint64_t chunk = 32u << 20;
        AlignedBuffer bounce(std::min<uint64_t>(align_up(t.nbytes) + 2 * kDirectAlign, chunk + 2 * kDirectAlign));
        for (uint64_t done = 0; done < t.nbytes; done += chunk) {
          const uint64_t n = std::min(chunk, t.nbytes - done);
          CoveringRead c = covering_read(loc.info->offset + done, n);
          io_.read_now({ReadEngine::Read{&f, c.offset, c.length, c.skip + n, bounce.data()}});
          std::memcpy(sec.buf.data() + (t.offset - sec.ts->offset) + done, bounce.data() + c.skip, n);
        }
      }
    }
    stats_.load_bytes += sec.ts->length;
    auto lookup = [&sec, this](const std::string& name) { return section_tensor(sec, sec.buf.data(), name); };
    if (sec.ts->layer >= 0)
      sec.lw = bind_layer_weights(config_, sec.ts->layer, lookup);
    else if (s == head_section_)
      sec.hw = bind_head_weights(config_, lookup);
  }
  // Streamed units in use order: layer sections, then the head's lm_head
  // row blocks (its small tensors are read here once and kept).
  section_unit_.assign(sections_.size(), -1);
  const uint64_t head_row = static_cast<uint64_t>(config_.hidden_size) * 2;
  for (int s : plan.streamed) {
    Section& sec = *sections_[s];
    if (s != head_section_) {
      section_unit_[s] = static_cast<int>(units_.size());
      units_.push_back(Unit{s, 0, 0});
      continue;
    }
    const TrunkTensor* lm = nullptr;
    for (const TrunkTensor& t : sec.ts->tensors)
      if (t.name == config_.lm_head_name) lm = &t;
    if (!lm) throw Error(ExitCode::kBadModel, "trunk section head lacks tensor '" + config_.lm_head_name + "' (re-run k3-pack)");
    if (plan.head_block_rows == 0) throw Error(ExitCode::kInternal, "the memory plan streams the head without blocks");
    lm_head_offset_ = lm->offset;
    head_unit0_ = static_cast<int>(units_.size());
    const int64_t vocab = config_.vocab_size, rows = static_cast<int64_t>(plan.head_block_rows);
    for (int64_t r = 0; r < vocab; r += rows) units_.push_back(Unit{s, r, std::min(rows, vocab - r)});
    std::unordered_map<std::string, const void*> small;
    for (const TrunkTensor& t : sec.ts->tensors) {
      if (&t == lm) continue;
      const CoveringRead c = covering_read(t.offset, t.nbytes);
      head_small_.emplace_back(c.length);
      io_.read_now({ReadEngine::Read{trunk_file_.get(), c.offset, c.length, c.skip + t.nbytes, head_small_.back().data()}});
      small[t.name] = head_small_.back().data() + c.skip;
      stats_.load_bytes += c.length;
    }
    head_small_hw_ = bind_head_weights(config_, [&](const std::string& name) -> const void* {
      if (name == config_.lm_head_name) return nullptr;  // read in blocks by for_each_head_block
      auto it = small.find(name);
      if (it == small.end())
        throw Error(ExitCode::kBadModel, "trunk section head lacks tensor '" + name + "' (re-run k3-pack)");
      return it->second;
    });
  }
  if (!units_.empty()) {
    uint64_t size = plan.stream_buffer_size;
    for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
      const Unit& un = units_[u];
      size = std::max(size, un.rows ? covering_read(lm_head_offset_ + un.first_row * head_row, un.rows * head_row).length
                                    : sections_[un.section]->ts->length);
    }
    for (int i = 0; i < std::max(2, plan.stream_buffers); ++i) {
      buffers_.push_back(std::make_unique<StreamBuffer>());
      buffers_.back()->buf = AlignedBuffer(size);
    }
  }

  slot_bytes_ = experts_.slot_bytes();
  slots_.resize(plan.cache_slots);
  if (plan.cache_slots) arena_ = AlignedBuffer(plan.cache_slots * slot_bytes_);
  for (size_t i = plan.cache_slots; i-- > 0;) free_slots_.push_back(static_cast<int>(i));

  {
    // Embedding rows come from trunk.bin, or from their shard when there is no packed trunk.
    const TrunkTensor& et = sections_[embed_section_]->ts->tensors.at(0);
    if (trunk_file_) {
      embed_file_ = trunk_file_.get();
      embed_base_ = et.offset;
    } else {
      const TensorLocation& loc = checkpoint.at(et.name);
      embed_file_ = shard_files_[loc.shard].get();
      embed_base_ = loc.info->offset;
    }
  }
  // A cache that holds every expert is filled at start: the run is then
  // fully resident and no token waits for an expert.
  const int moe_layers = config_.num_hidden_layers - config_.first_k_dense_replace;
  if (moe_layers > 0 && plan.cache_slots == static_cast<uint64_t>(moe_layers) * config_.num_experts) preload_experts();
  const uint64_t row = static_cast<uint64_t>(config_.hidden_size) * 2;
  row_buf_ = AlignedBuffer(align_up(row) + 2 * kDirectAlign);
  stats_.load_seconds = since(t0);
  // Start the first streamed section now so the first token does not wait for all of it.
  if (!units_.empty()) read_ahead(-1, static_cast<int>(buffers_.size()));
}

void StreamingWeights::preload_experts() {
  ReadLatch latch;
  std::vector<ReadEngine::Read> reads;
  std::vector<std::pair<int, int>> order;
  for (int l = config_.first_k_dense_replace; l < config_.num_hidden_layers; ++l)
    for (int e = 0; e < config_.num_experts; ++e) {
      const int slot = take_slot();
      uint8_t* base = arena_.data() + static_cast<uint64_t>(slot) * slot_bytes_;
      for (const ExpertRead& r : experts_.reads(l, e)) {
        reads.push_back(ReadEngine::Read{shard_files_[r.shard].get(), r.offset, r.length, r.need, base + r.slot_offset});
        stats_.load_bytes += r.length;
      }
      slots_[slot].key = static_cast<int64_t>(l) * config_.num_experts + e;
      order.emplace_back(l, slot);
    }
  io_.submit(std::move(reads), latch.callback(), true);
  latch.wait();
  for (const auto& [l, slot] : order) {
    Slot& sl = slots_[slot];
    const int e = static_cast<int>(sl.key % config_.num_experts);
    const uint8_t* base = arena_.data() + static_cast<uint64_t>(slot) * slot_bytes_;
    if (config_.experts_mxfp4) check_scales(l, e, base);
    sl.w = bind_expert(l, e, base);
    resident_[sl.key] = slot;
  }
}

ExpertWeights StreamingWeights::bind_expert(int layer, int e, const uint8_t* base) const {
  const std::string prefix = expert_tensor_prefix(config_, layer, e);
  return bind_expert_weights(config_, layer, e, [&](const std::string& name) -> const void* {
    const std::string suffix = name.substr(prefix.size());
    for (size_t k = 0; k < experts_.suffixes().size(); ++k)
      if (experts_.suffixes()[k] == suffix) return base + experts_.tensor_offset(layer, e, k);
    throw Error(ExitCode::kInternal, "unknown expert tensor " + name);
  });
}

StreamingWeights::~StreamingWeights() {
  for (auto& b : buffers_) {
    std::unique_lock<std::mutex> lk(b->mu);
    b->cv.wait(lk, [&] { return b->done; });
  }
  // Expert reads still in flight (a prefetch whose layer failed) write into
  // the arena: wait for them before it goes.
  std::unique_lock<std::mutex> lk(arrivals_mu_);
  while (!pending_.empty()) {
    arrivals_cv_.wait(lk, [&] { return !arrivals_.empty(); });
    pending_.erase(arrivals_.front().key);
    arrivals_.pop_front();
  }
}

const void* StreamingWeights::section_tensor(const Section& sec, const uint8_t* base, const std::string& name) const {
  auto it = sec.rel.find(name);
  if (it == sec.rel.end())
    throw Error(ExitCode::kBadModel, "trunk section " + sec.ts->name + " lacks tensor '" + name + "' (re-run k3-pack)");
  return base + it->second;
}

bool StreamingWeights::direct_io() const {
  for (const auto& f : shard_files_)
    if (!f->is_direct()) return false;
  return !trunk_file_ || trunk_file_->is_direct();
}

StreamStats StreamingWeights::stats() const {
  std::lock_guard<std::mutex> lk(stats_mu_);
  StreamStats s = stats_;
  s.io_busy_seconds = io_.busy_seconds();
  return s;
}

void StreamingWeights::embed(const int32_t* ids, size_t n, float* out) {
  const Section& sec = *sections_[embed_section_];
  const TrunkTensor& t = sec.ts->tensors.at(0);
  const uint64_t hidden = config_.hidden_size, row = hidden * 2;
  const DirectFile* file = embed_file_;
  const uint64_t base = embed_base_;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* src;
    if (sec.pinned) {
      src = sec.buf.data() + (t.offset - sec.ts->offset) + static_cast<uint64_t>(ids[i]) * row;
    } else {
      CoveringRead c = covering_read(base + static_cast<uint64_t>(ids[i]) * row, row);
      const auto t0 = Clock::now();
      io_.read_now({ReadEngine::Read{file, c.offset, c.length, c.skip + row, row_buf_.data()}});
      std::lock_guard<std::mutex> lk(stats_mu_);
      stats_.io_wait_seconds += since(t0);
      stats_.trunk_bytes += c.length;
      src = row_buf_.data() + c.skip;
    }
    const uint16_t* b = reinterpret_cast<const uint16_t*>(src);
    for (uint64_t d = 0; d < hidden; ++d) out[i * hidden + d] = bf16_to_f32(b[d]);
  }
}

void StreamingWeights::issue_stream_read(StreamBuffer& b, int u, bool urgent) {
  wait_buffer(b);  // never overwrite a buffer a read is still filling
  const Unit& un = units_[u];
  const TrunkSection& ts = *sections_[un.section]->ts;
  uint64_t offset = ts.offset, length = ts.length, need = ts.length, skip = 0;
  if (un.rows) {
    const uint64_t bytes = static_cast<uint64_t>(un.rows) * config_.hidden_size * 2;
    const CoveringRead c = covering_read(lm_head_offset_ + static_cast<uint64_t>(un.first_row) * config_.hidden_size * 2, bytes);
    offset = c.offset;
    length = c.length;
    need = c.skip + bytes;
    skip = c.skip;
  }
  {
    std::lock_guard<std::mutex> lk(b.mu);
    b.unit = u;
    b.skip = skip;
    b.pending = true;
    b.done = false;
    b.error.clear();
  }
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    stats_.trunk_bytes += length;
  }
  StreamBuffer* bp = &b;
  io_.submit({ReadEngine::Read{trunk_file_.get(), offset, length, need, b.buf.data()}},
             [bp](const std::string& err) {
               std::lock_guard<std::mutex> lk(bp->mu);
               bp->error = err;
               bp->done = true;
               bp->cv.notify_all();
             },
             urgent);
}

void StreamingWeights::wait_buffer(StreamBuffer& b) {
  std::unique_lock<std::mutex> lk(b.mu);
  if (b.done) return;
  const auto t0 = Clock::now();
  b.cv.wait(lk, [&] { return b.done; });
  std::lock_guard<std::mutex> slk(stats_mu_);
  stats_.io_wait_seconds += since(t0);
}

void StreamingWeights::read_ahead(int u, int count) {
  const int n = static_cast<int>(units_.size());
  count = std::min(count, n - 1);
  if (count <= 0) return;
  auto ahead = [&](int unit) {  // unit is one of the `count` after u
    const int d = ((unit - u) % n + n) % n;
    return d >= 1 && d <= count;
  };
  for (int k = 1; k <= count; ++k) {
    const int next = (u + k) % n;
    bool buffered = false;
    for (auto& b : buffers_) buffered = buffered || b->unit == next;
    if (buffered) continue;
    StreamBuffer* free_buf = nullptr;
    for (auto& b : buffers_)
      if (!b->held && (b->unit < 0 || !ahead(b->unit))) {
        free_buf = b.get();
        break;
      }
    if (!free_buf) return;
    issue_stream_read(*free_buf, next, false);
  }
}

StreamingWeights::StreamBuffer& StreamingWeights::acquire_unit(int u) {
  StreamBuffer* b = nullptr;
  for (auto& x : buffers_)
    if (x->unit == u) b = x.get();
  if (!b) {
    // Not read ahead (the first use, or after a failure): prefer a buffer
    // that holds nothing still to come.
    const int n = static_cast<int>(units_.size()), depth = static_cast<int>(buffers_.size());
    for (auto& x : buffers_)
      if (!x->held && (x->unit < 0 || ((x->unit - u) % n + n) % n >= depth)) {
        b = x.get();
        break;
      }
    if (!b)
      for (auto& x : buffers_)
        if (!x->held) {
          b = x.get();
          break;
        }
    if (!b) throw Error(ExitCode::kInternal, "no free trunk stream buffer (every buffer held at once)");
    issue_stream_read(*b, u, true);
  }
  wait_buffer(*b);
  {
    std::lock_guard<std::mutex> lk(b->mu);
    if (!b->error.empty()) {
      std::string e = b->error;
      b->unit = -1;
      throw Error(ExitCode::kIo, e);
    }
  }
  b->held = true;
  const Unit& un = units_[u];
  if (un.rows == 0) {
    const Section& sec = *sections_[un.section];
    auto lookup = [&sec, b, this](const std::string& name) { return section_tensor(sec, b->buf.data(), name); };
    b->lw = bind_layer_weights(config_, sec.ts->layer, lookup);
  }
  // Every other buffer reads ahead while this unit computes.
  read_ahead(u, static_cast<int>(buffers_.size()) - 1);
  return *b;
}

void StreamingWeights::release_unit(int u) {
  for (auto& b : buffers_)
    if (b->unit == u) b->held = false;
  // The freed buffer starts on the unit after the ones already in flight at
  // once, before the next unit is even acquired, so the disk never waits for
  // the compute thread to come round.
  read_ahead(u, static_cast<int>(buffers_.size()));
}

const LayerWeights& StreamingWeights::acquire_layer(int layer) {
  const int s = layer_section_.at(layer);
  const Section& sec = *sections_[s];
  if (sec.pinned) return sec.lw;
  return acquire_unit(section_unit_[s]).lw;
}

void StreamingWeights::release_layer(int layer) {
  const int s = layer_section_.at(layer);
  if (!sections_[s]->pinned) release_unit(section_unit_[s]);
}

const HeadWeights& StreamingWeights::acquire_head() {
  const Section& sec = *sections_[head_section_];
  return sec.pinned ? sec.hw : head_small_hw_;
}

void StreamingWeights::release_head() {}

void StreamingWeights::for_each_head_block(const HeadWeights& head, const HeadBlock& on_block) {
  if (head_unit0_ < 0) {
    on_block(0, head.lm_head);
    return;
  }
  for (int u = head_unit0_; u < static_cast<int>(units_.size()); ++u) {
    StreamBuffer& b = acquire_unit(u);
    const Unit& un = units_[u];
    const Bf16Matrix rows{reinterpret_cast<const uint16_t*>(b.buf.data() + b.skip), un.rows, config_.hidden_size};
    try {
      on_block(un.first_row, rows);
    } catch (...) {
      release_unit(u);
      throw;
    }
    release_unit(u);
  }
}

int StreamingWeights::take_slot(const std::vector<int64_t>* keep) {
  if (!free_slots_.empty()) {
    int s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  int best = -1;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].in_use == 0 && slots_[i].key >= 0 && (best < 0 || slots_[i].tick < slots_[best].tick) &&
        !(keep && std::find(keep->begin(), keep->end(), slots_[i].key) != keep->end()))
      best = static_cast<int>(i);
  if (best >= 0) {
    resident_.erase(slots_[best].key);
    slots_[best].key = -1;
  }
  return best;
}

void StreamingWeights::check_scales(int layer, int expert, const uint8_t* base) const {
  for (size_t k = 0; k < experts_.suffixes().size(); ++k) {
    if (!experts_.is_scale(k)) continue;
    const uint8_t* p = base + experts_.tensor_offset(layer, expert, k);
    const uint64_t n = experts_.tensor_bytes(k);
    for (uint64_t i = 0; i < n; ++i)
      if (p[i] >= 254)
        throw Error(ExitCode::kBadModel, expert_tensor_prefix(config_, layer, expert) + experts_.suffixes()[k] +
                                             ": scale byte " + std::to_string(p[i]) +
                                             " (bytes >= 254 are NaN or overflow FP32)");
  }
}

void StreamingWeights::issue_expert_read(int layer, int expert, int slot) {
  const int64_t key = static_cast<int64_t>(layer) * config_.num_experts + expert;
  Slot& sl = slots_[slot];
  sl.key = key;
  sl.in_use = 1;  // not evictable until delivered
  uint8_t* base = arena_.data() + static_cast<uint64_t>(slot) * slot_bytes_;
  std::vector<ReadEngine::Read> reads;
  uint64_t bytes = 0;
  for (const ExpertRead& r : experts_.reads(layer, expert)) {
    reads.push_back(ReadEngine::Read{shard_files_[r.shard].get(), r.offset, r.length, r.need, base + r.slot_offset});
    bytes += r.length;
  }
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    stats_.expert_bytes += bytes;
  }
  {
    std::lock_guard<std::mutex> lk(arrivals_mu_);
    pending_[key] = slot;
  }
  io_.submit(std::move(reads),
             [this, key, slot](const std::string& err) {
               std::lock_guard<std::mutex> lk(arrivals_mu_);
               arrivals_.push_back(Arrival{key, slot, err});
               arrivals_cv_.notify_all();
             },
             true);
}

void StreamingWeights::keep_stray(const Arrival& a) {
  Slot& sl = slots_[a.slot];
  sl.in_use = 0;
  const int layer = static_cast<int>(a.key / config_.num_experts), e = static_cast<int>(a.key % config_.num_experts);
  const uint8_t* base = arena_.data() + static_cast<uint64_t>(a.slot) * slot_bytes_;
  bool ok = a.error.empty();
  if (ok && config_.experts_mxfp4) {
    try {
      check_scales(layer, e, base);
    } catch (const Error&) {
      ok = false;
    }
  }
  if (!ok) {
    sl.key = -1;
    free_slots_.push_back(a.slot);
    return;
  }
  sl.w = bind_expert(layer, e, base);
  sl.tick = ++tick_;
  resident_[a.key] = a.slot;
}

void StreamingWeights::prefetch_experts(int layer, const std::vector<int>& experts) {
  if (slots_.empty()) return;
  const int64_t E = config_.num_experts;
  std::vector<int64_t> keys;
  for (int e : experts) keys.push_back(layer * E + e);
  for (size_t k = 0; k < experts.size(); ++k) {
    if (resident_.count(keys[k])) continue;
    {
      std::lock_guard<std::mutex> lk(arrivals_mu_);
      if (pending_.count(keys[k])) continue;
    }
    // Never evict an expert this layer is about to use.
    const int slot = take_slot(&keys);
    if (slot < 0) return;  // for_each_expert issues the rest as slots free up
    issue_expert_read(layer, experts[k], slot);
  }
}

void StreamingWeights::for_each_expert(int layer, const std::vector<int>& experts,
                                       const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) {
  const int64_t E = config_.num_experts;
  std::vector<size_t> hits;
  std::deque<size_t> misses;
  std::unordered_map<int64_t, size_t> index;  // key -> k of this call
  size_t inflight = 0;                        // reads of this call not yet arrived
  for (size_t k = 0; k < experts.size(); ++k) {
    const int64_t key = layer * E + experts[k];
    index[key] = k;
    auto it = resident_.find(key);
    if (it != resident_.end()) {
      slots_[it->second].in_use++;
      hits.push_back(k);
      continue;
    }
    bool pending;
    {
      std::lock_guard<std::mutex> lk(arrivals_mu_);
      pending = pending_.count(key) > 0;
    }
    if (pending)
      ++inflight;  // prefetch_experts started it
    else
      misses.push_back(k);
  }
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    stats_.experts_requested += experts.size();
    stats_.experts_resident += hits.size();
  }
  std::string io_error;
  std::exception_ptr failure;
  auto issue = [&] {
    while (!misses.empty() && !failure && io_error.empty()) {
      const int slot = take_slot();
      if (slot < 0) return;
      const size_t k = misses.front();
      misses.pop_front();
      issue_expert_read(layer, experts[k], slot);
      ++inflight;
    }
  };
  auto deliver = [&](size_t k, int slot) {
    Slot& sl = slots_[slot];
    if (!failure) {
      try {
        on_ready(k, sl.w);
      } catch (...) {
        failure = std::current_exception();
      }
    }
    sl.in_use = 0;
    sl.tick = ++tick_;
  };
  // Misses go to the disk first; resident experts compute while they load.
  issue();
  for (size_t k : hits) {
    deliver(k, resident_.at(layer * E + experts[k]));
    issue();
  }
  while (inflight > 0 || (!misses.empty() && !failure && io_error.empty())) {
    if (inflight == 0) {
      issue();
      if (inflight == 0) throw Error(ExitCode::kInternal, "expert cache has no slot to load into");
    }
    Arrival a;
    {
      std::unique_lock<std::mutex> lk(arrivals_mu_);
      if (arrivals_.empty()) {
        const auto t0 = Clock::now();
        arrivals_cv_.wait(lk, [&] { return !arrivals_.empty(); });
        std::lock_guard<std::mutex> slk(stats_mu_);
        stats_.io_wait_seconds += since(t0);
      }
      a = std::move(arrivals_.front());
      arrivals_.pop_front();
      pending_.erase(a.key);
    }
    auto idx = index.find(a.key);
    if (idx == index.end()) {  // a prefetch this call did not ask for
      keep_stray(a);
      continue;
    }
    --inflight;
    Slot& sl = slots_[a.slot];
    if (!a.error.empty() || failure || !io_error.empty()) {
      if (!a.error.empty() && io_error.empty()) io_error = a.error;
      sl.key = -1;
      sl.in_use = 0;
      free_slots_.push_back(a.slot);
      continue;
    }
    const int e = experts[idx->second];
    const uint8_t* base = arena_.data() + static_cast<uint64_t>(a.slot) * slot_bytes_;
    try {
      if (config_.experts_mxfp4) check_scales(layer, e, base);
    } catch (...) {
      failure = std::current_exception();
      sl.key = -1;
      sl.in_use = 0;
      free_slots_.push_back(a.slot);
      continue;
    }
    sl.w = bind_expert(layer, e, base);
    resident_[sl.key] = a.slot;
    deliver(idx->second, a.slot);
    issue();
  }
  if (failure) std::rethrow_exception(failure);
  if (!io_error.empty()) throw Error(ExitCode::kIo, io_error);
}

}  // namespace k3
