#include "trunk_stream/trunk_stream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

#include "checkpoint/checkpoint.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/file.h"
#include "kernels/bf16.h"
#include "model/weight_binding.h"
#include "trunk/blocks.h"
#include "trunk/pack_command.h"
#include "trunk/row_blocks.h"
#include "trunk_stream/trunk_stream_parts.h"

namespace k3 {

TrunkStream::TrunkStream(const ModelConfig& config, const Checkpoint& checkpoint, const DirectFile* trunk_file,
                         const std::vector<std::unique_ptr<DirectFile>>& shard_files, TrunkLayout layout,
                         const MemoryPlan& plan, ReadEngine& io, const ProgressCallback& progress)
    : config_(config), layout_(std::move(layout)), trunk_file_(trunk_file), io_(io) {
  index_sections();

  if (trunk_file_ && layout_.compressed()) {
    uint64_t largest_stored = 0;
    for (int s : plan.streamed) largest_stored = std::max(largest_stored, layout_.sections[s].stored_length);
    // No piece larger than a stream buffer's unit (row blocks stay small).
    if (plan.stream_buffer_size) largest_stored = std::min(largest_stored, plan.stream_buffer_size);
    reader_ = std::make_unique<TrunkBlockReader>(io_, *trunk_file_, TrunkBlockReader::piece_bytes_for(largest_stored));
  }
  uint64_t pin_total = 0, pinned = 0;
  for (int s : plan.pinned) pin_total += layout_.sections[s].length;
  if (progress && pin_total) progress("pinning trunk", 0, pin_total);
  for (int s : plan.pinned) {
    pin_section(s, checkpoint, shard_files);
    pinned += layout_.sections[s].length;
    if (progress) progress("pinning trunk", pinned, pin_total);
  }
  plan_stream_units(plan);

  open_embedding(checkpoint, shard_files);
  // No hashing pass before the first token: every block of a raw section is
  // checked against its hash in trunk.json when a read first brings it in,
  // and a compressed block each time it is decoded.
}

// One Section per section of the layout, found by layer and by name; a
// raw section of a packed trunk gets its blocks' checked flags.
void TrunkStream::index_sections() {
  layer_section_.assign(config_.num_hidden_layers, -1);
  for (size_t s = 0; s < layout_.sections.size(); ++s) {
    auto sec = std::make_unique<Section>();
    sec->ts = &layout_.sections[s];
    for (const TrunkTensor& t : sec->ts->tensors) sec->rel[t.name] = t.offset - sec->ts->offset;
    const int layer = sec->ts->layer;
    if (layer >= 0 && layer < config_.num_hidden_layers) layer_section_[layer] = static_cast<int>(s);
    if (sec->ts->name == "head") head_section_ = static_cast<int>(s);
    if (sec->ts->name == "embedding") embed_section_ = static_cast<int>(s);
    if (trunk_file_ && !sec->ts->compressed) {
      if (sec->ts->blocks.empty() && !sec->ts->tensors.empty())  // open_trunk_layout refuses such trunks
        throw Error(ExitCode::kBadModel,
                    trunk_file_->path() + ": section " + sec->ts->name + " has no block hashes " + rerun_pack_hint());
      sec->block_ok = std::make_unique<std::atomic<bool>[]>(sec->ts->blocks.size());
    }
    sections_.push_back(std::move(sec));
  }
  for (int l = 0; l < config_.num_hidden_layers; ++l)
    if (layer_section_[l] < 0)
      throw Error(ExitCode::kBadModel, "the trunk has no section for layer " + std::to_string(l));
  if (head_section_ < 0 || embed_section_ < 0)
    throw Error(ExitCode::kBadModel, "the trunk lacks its embedding or head section " + rerun_pack_hint());
}

// Streamed units in use order, and the stream buffers they pass through.
void TrunkStream::plan_stream_units(const MemoryPlan& plan) {
  // Layer sections, then the head's lm_head
  // row blocks (its small tensors are read here once and kept).
  section_unit_.assign(sections_.size(), -1);
  for (int s : plan.streamed) {
    if (s == head_section_) {
      plan_head_blocks(s, plan);
    } else if (plan.block_bytes) {
      plan_row_blocks(s, plan);
    } else {
      section_unit_[s] = static_cast<int>(units_.size());
      units_.push_back(Unit{s, UnitKind::kSection});
    }
  }
  if (!units_.empty()) {
    uint64_t size = plan.stream_buffer_size;
    for (const Unit& un : units_) size = std::max(size, unit_buffer_bytes(un));
    bool compressed = false;
    for (const Unit& un : units_) compressed = compressed || sections_[un.section]->ts->compressed;
    for (int i = 0; i < std::max(plan.block_bytes ? 3 : 2, plan.stream_buffers); ++i) {
      buffers_.push_back(std::make_unique<StreamBuffer>());
      buffers_.back()->buf = AlignedBuffer(size);
      if (compressed) buffers_.back()->staging = AlignedBuffer(TrunkBlockReader::staging_bytes(reader_->piece_bytes()));
    }
  }
}

void TrunkStream::open_embedding(const Checkpoint& checkpoint,
                                 const std::vector<std::unique_ptr<DirectFile>>& shard_files) {
  // Embedding rows come from trunk.bin, or from their shard when there is no packed trunk.
  const TrunkTensor& et = sections_[embed_section_]->ts->tensors.at(0);
  if (trunk_file_) {
    embed_file_ = trunk_file_;
    if (sections_[embed_section_]->ts->compressed)
      throw Error(ExitCode::kBadModel, trunk_file_->path() + ": the embedding section is compressed, which " +
                                           spelled(kPackTrunk) + " never writes " + rerun_pack_hint());
    embed_base_ = stored_at(*sections_[embed_section_]->ts, et.offset);
  } else {
    const TensorLocation& loc = checkpoint.at(et.name);
    embed_file_ = shard_files[loc.shard].get();
    embed_base_ = loc.info->offset;
  }
  // An embedding row is read alone once its trunk blocks were checked; the
  // first read of a row reads its blocks whole (a row may straddle two).
  const uint64_t row = static_cast<uint64_t>(config_.hidden_size) * 2;
  row_buf_ = AlignedBuffer(align_up(row + 2 * layout_.block_bytes) + 2 * kDirectAlign);
}

// A pinned section: read once, verified, bound.
void TrunkStream::pin_section(int s, const Checkpoint& checkpoint,
                              const std::vector<std::unique_ptr<DirectFile>>& shard_files) {
  Section& sec = *sections_[s];
  sec.pinned = true;
  sec.buf = AlignedBuffer(sec.ts->length);
  uint64_t read = sec.ts->length;
  if (trunk_file_) {
    AlignedBuffer staging;
    read = read_section_whole(sec, sec.buf.data(), staging);
  } else {
    // No packed trunk: gather each tensor from its shard.
    for (const TrunkTensor& t : sec.ts->tensors) {
      const TensorLocation& loc = checkpoint.at(t.name);
      const DirectFile& f = *shard_files[loc.shard];
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
  stats_.load_bytes += read;
  auto lookup = [&sec, this](const std::string& name) { return section_tensor(sec, sec.buf.data(), name); };
  if (sec.ts->layer >= 0) sec.lw = bind_layer_weights(config_, sec.ts->layer, lookup);
  else if (s == head_section_) sec.hw = bind_head_weights(config_, lookup);
}

// A streamed head: lm_head as units of plan.head_block_rows rows, its small
// tensors read now and kept.
void TrunkStream::plan_head_blocks(int s, const MemoryPlan& plan) {
  const Section& sec = *sections_[s];
  const TrunkTensor* lm = nullptr;
  for (const TrunkTensor& t : sec.ts->tensors)
    if (t.name == config_.lm_head_name) lm = &t;
  if (!lm)
    throw Error(ExitCode::kBadModel,
                "trunk section head lacks tensor '" + config_.lm_head_name + "' " + rerun_pack_hint());
  if (plan.head_block_rows == 0) throw Error(ExitCode::kInternal, "the memory plan streams the head without blocks");
  lm_head_offset_ = lm->offset;
  head_unit0_ = static_cast<int>(units_.size());
  const int64_t vocab = config_.vocab_size, rows = static_cast<int64_t>(plan.head_block_rows);
  for (int64_t r = 0; r < vocab; r += rows)
    units_.push_back(Unit{s, UnitKind::kHeadRows, -1, r, std::min(rows, vocab - r)});
  std::unordered_map<std::string, const void*> small;
  AlignedBuffer staging;
  for (const TrunkTensor& t : sec.ts->tensors) {
    if (&t == lm) continue;
    if (sec.ts->compressed) {
      // Codec blocks start at each tensor's first byte.
      const BlockRange r = tensor_blocks(*sec.ts, t);
      if (staging.size() == 0) staging = AlignedBuffer(TrunkBlockReader::staging_bytes(reader_->piece_bytes()));
      head_small_.emplace_back(t.nbytes);
      stats_.load_bytes += reader_->read_now(*sec.ts, r, head_small_.back().data(), t.offset, t.nbytes, staging);
      small[t.name] = head_small_.back().data();
      continue;
    }
    const CoveringRead c = covering_read(stored_at(*sec.ts, t.offset), t.nbytes);
    head_small_.emplace_back(c.length);
    io_.read_now({ReadEngine::Read{trunk_file_, c.offset, c.length, c.skip + t.nbytes, head_small_.back().data()}});
    const std::string bad = check_raw_blocks(*sec.ts, tensor_blocks(*sec.ts, t), head_small_.back().data() + c.skip,
                                             t.offset, t.nbytes, sec.block_ok.get(), trunk_file_->path());
    if (!bad.empty()) throw Error(ExitCode::kBadModel, bad);
    small[t.name] = head_small_.back().data() + c.skip;
    stats_.load_bytes += c.length;
  }
  head_small_hw_ = bind_head_weights(config_, [&](const std::string& name) -> const void* {
    if (name == config_.lm_head_name) return nullptr;  // read in blocks by for_each_head_block
    auto it = small.find(name);
    if (it == small.end())
      throw Error(ExitCode::kBadModel, "trunk section head lacks tensor '" + name + "' " + rerun_pack_hint());
    return it->second;
  });
}

// A streamed layer in row-block mode: its held part, then each matrix it
// reads through lin() as row blocks, in use order.
void TrunkStream::plan_row_blocks(int s, const MemoryPlan& plan) {
  Section& sec = *sections_[s];
  sec.rb = layer_row_blocks(config_, *sec.ts, plan.block_bytes);
  for (const HeldTensor& h : sec.rb.held) sec.held_rel[h.tensor->name] = h.buffer_offset + h.skip;
  sec.held_unit = static_cast<int>(units_.size());
  section_unit_[s] = sec.held_unit;
  units_.push_back(Unit{s, UnitKind::kHeld});
  for (size_t m = 0; m < sec.rb.matrices.size(); ++m) {
    const StreamedMatrix& sm = sec.rb.matrices[m];
    const int first = static_cast<int>(units_.size());
    const int64_t rows = sm.shape.rows, block = static_cast<int64_t>(sm.block_rows);
    for (int64_t r = 0; r < rows; r += block)
      units_.push_back(Unit{s, UnitKind::kMatrixRows, static_cast<int>(m), r, std::min(block, rows - r)});
    sec.views.push_back(
        std::make_unique<BlockedMatrix>(this, first, static_cast<int>(units_.size()) - first, sm.shape.cols));
    sec.view_of[sm.shape.name] = Bf16Matrix{nullptr, sm.shape.rows, sm.shape.cols, sec.views.back().get()};
  }
}

void TrunkStream::start_read_ahead() {
  if (!units_.empty()) read_ahead(-1, static_cast<int>(buffers_.size()));
}

TrunkStream::~TrunkStream() {
  for (auto& b : buffers_) {
    std::unique_lock<std::mutex> lk(b->mu);
    b->cv.wait(lk, [&] { return b->done; });
  }
}

const void* TrunkStream::section_tensor(const Section& sec, const uint8_t* base, const std::string& name) const {
  auto it = sec.rel.find(name);
  if (it == sec.rel.end())
    throw Error(ExitCode::kBadModel,
                "trunk section " + sec.ts->name + " lacks tensor '" + name + "' " + rerun_pack_hint());
  return base + it->second;
}

TrunkStreamStats TrunkStream::stats() const {
  std::lock_guard<std::mutex> lk(stats_mu_);
  TrunkStreamStats st = stats_;
  if (reader_) st.decode_seconds = reader_->decode_seconds();
  return st;
}

void TrunkStream::embed(const int32_t* ids, size_t n, float* out) {
  const Section& sec = *sections_[embed_section_];
  const TrunkTensor& t = sec.ts->tensors.at(0);
  const uint64_t hidden = config_.hidden_size, row = hidden * 2;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* src;
    if (sec.pinned) {
      src = sec.buf.data() + (t.offset - sec.ts->offset) + static_cast<uint64_t>(ids[i]) * row;
    } else {
      // A row of a packed trunk whose blocks are not yet checked is read
      // with them, whole; once checked, alone.
      uint64_t begin = t.offset + static_cast<uint64_t>(ids[i]) * row, length = row, skip = 0;
      BlockRange blocks;
      if (sec.block_ok) {
        const DecodedRows d = decoded_rows(*sec.ts, begin, begin + row);
        if (!blocks_verified(d.blocks, sec.block_ok.get())) {
          blocks = d.blocks;
          begin = d.base;
          length = d.bytes;
          skip = d.skip;
        }
      }
      const uint64_t at = embed_base_ + (begin - t.offset);
      CoveringRead c = covering_read(at, length);
      if (c.length > row_buf_.size())
        throw Error(ExitCode::kInternal,
                    "embedding row read of " + std::to_string(c.length) + " bytes exceeds its buffer");
      const auto t0 = SteadyClock::now();
      io_.read_now({ReadEngine::Read{embed_file_, c.offset, c.length, c.skip + length, row_buf_.data()}});
      if (blocks.last > blocks.first) {
        const std::string bad = check_raw_blocks(*sec.ts, blocks, row_buf_.data() + c.skip, begin, length,
                                                 sec.block_ok.get(), embed_file_->path());
        if (!bad.empty()) throw Error(ExitCode::kBadModel, bad);
      }
      std::lock_guard<std::mutex> lk(stats_mu_);
      stats_.io_wait_seconds += seconds_since(t0);
      stats_.trunk_bytes += c.length;
      src = row_buf_.data() + c.skip + skip;
    }
    const uint16_t* b = reinterpret_cast<const uint16_t*>(src);
    for (uint64_t d = 0; d < hidden; ++d) out[i * hidden + d] = kernels::bf16_to_f32(b[d]);
  }
}

void TrunkStream::read_ahead(int u, int count) {
  const int n = static_cast<int>(units_.size());
  count = std::min(count, n - 1);
  if (count <= 0) return;
  auto ahead = [&](int unit) {  // unit is one of the `count` after u
    const int d = ((unit - u) % n + n) % n;
    return d >= 1 && d <= count;
  };
  for (int k = 1; k <= count; ++k) {
    const int next = (u + k) % n;
    // A held chunk reads its layers whole itself: only head blocks ahead.
    // A layer over the hold limit reads ahead within itself.
    if (holding_ && units_[next].kind != UnitKind::kHeadRows &&
        !(skipping_ && u >= 0 && units_[next].section == units_[u].section))
      return;
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

TrunkStream::StreamBuffer& TrunkStream::acquire_unit(int u) {
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
    std::lock_guard<std::mutex> lk(stats_mu_);
    ++stats_.units_not_ahead;
  }
  wait_buffer(*b);
  {
    std::lock_guard<std::mutex> lk(b->mu);
    if (!b->error.empty()) {
      std::string e = b->error;
      b->unit = -1;
      throw Error(b->corrupt ? ExitCode::kBadModel : ExitCode::kIo, e);
    }
  }
  b->held = true;
  last_acquired_ = u;
  const Unit& un = units_[u];
  const Section& sec = *sections_[un.section];
  if (un.kind == UnitKind::kSection) {
    auto lookup = [&sec, b, this](const std::string& name) { return section_tensor(sec, b->buf.data(), name); };
    b->lw = bind_layer_weights(config_, sec.ts->layer, lookup);
  } else if (un.kind == UnitKind::kHeld) {
    // Held tensors from this buffer, streamed matrices as their block views.
    const TensorLookup lookup = [&sec, b](const std::string& name) -> const void* {
      auto it = sec.held_rel.find(name);
      if (it == sec.held_rel.end())
        throw Error(ExitCode::kBadModel,
                    "trunk section " + sec.ts->name + " lacks tensor '" + name + "' " + rerun_pack_hint());
      return b->buf.data() + it->second;
    };
    const RowMatrixLookup rows = [&sec, &lookup](const std::string& name, int64_t r, int64_t c) {
      auto it = sec.view_of.find(name);
      if (it != sec.view_of.end()) return it->second;
      return Bf16Matrix{static_cast<const uint16_t*>(lookup(name)), r, c};  // in the held part
    };
    b->lw = bind_layer_weights(config_, sec.ts->layer, lookup, &rows);
  }
  // Every other buffer reads ahead while this unit computes.
  read_ahead(u, static_cast<int>(buffers_.size()) - 1);
  return *b;
}

void TrunkStream::release_unit(int u) {
  for (auto& b : buffers_)
    if (b->unit == u) b->held = false;
  // The freed buffer starts on the unit after the ones already in flight at
  // once, before the next unit is even acquired, so the disk never waits for
  // the compute thread to come round. Ahead of the last unit acquired: a
  // layer's held part is released after its blocks have passed.
  read_ahead(last_acquired_, static_cast<int>(buffers_.size()));
}

const LayerWeights& TrunkStream::acquire_layer(int layer) {
  const int s = layer_section_.at(layer);
  const Section& sec = *sections_[s];
  if (sec.pinned) return sec.lw;
  if (holding_) return skipped(sec) ? acquire_skipped_layer(s) : acquire_held_layer(s);
  if (sec.lent) {  // its read after the chunk failed: again, now (a failure throws here)
    repin_section(s);
    return sec.lw;
  }
  return acquire_unit(section_unit_[s]).lw;
}

void TrunkStream::release_layer(int layer) {
  const int s = layer_section_.at(layer);
  if (!sections_[s]->pinned && (!holding_ || skipped(*sections_[s]))) release_unit(section_unit_[s]);
}

bool TrunkStream::skipped(const Section& sec) const { return !sec.pinned && sec.ts->length > hold_limit_; }

const HeadWeights& TrunkStream::acquire_head() {
  const Section& sec = *sections_[head_section_];
  return sec.pinned ? sec.hw : head_small_hw_;
}

void TrunkStream::for_each_head_block(const HeadWeights& head, const WeightSource::HeadBlock& on_block) {
  if (head_unit0_ < 0) {
    on_block(0, head.lm_head);
    return;
  }
  for_each_rows(head_unit0_, static_cast<int>(units_.size()) - head_unit0_, config_.hidden_size, on_block);
}

void TrunkStream::for_each_rows(int first, int count, int64_t cols, const MatrixRows::Block& on_block) {
  for (int u = first; u < first + count; ++u) {
    StreamBuffer& b = acquire_unit(u);
    const Unit& un = units_[u];
    const Bf16Matrix rows{reinterpret_cast<const uint16_t*>(b.buf.data() + b.skip), un.rows, cols};
    try {
      on_block(un.first_row, rows);
    } catch (...) {
      release_unit(u);
      throw;
    }
    release_unit(u);
  }
}

}  // namespace k3
