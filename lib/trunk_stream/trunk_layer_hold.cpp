// A layer-major chunk that holds each layer whole (MemoryPlan::layer_held):
// a streamed layer's section is read whole into one hold buffer, as a pinned
// section is read at start, and its matrices are bound to it plain, so a
// chunk whose rows pass in many sub-batches reads each row block once. A
// layer over the hold limit (MemoryPlan::skipped_layers) streams in row
// blocks instead, through the stream buffers in the hold buffer's stead. A
// product's rows do not depend on how its weight rows were read, so the bits
// are the same as through the stream buffers.
#include <algorithm>

#include "common/clock.h"
#include "common/error.h"
#include "model/weight_binding.h"
#include "trunk/blocks.h"
#include "trunk_stream/trunk_stream_parts.h"

namespace k3 {

uint64_t TrunkStream::read_section_whole(const Section& sec, uint8_t* dst, AlignedBuffer& staging) {
  const TrunkSection& ts = *sec.ts;
  if (ts.compressed) {
    // Every block is checked against its own hash as it is decoded, which
    // covers every stored byte (padding decodes as zeros), so the section is
    // not hashed a second time.
    if (staging.size() == 0) staging = AlignedBuffer(TrunkBlockReader::staging_bytes(reader_->piece_bytes()));
    zero_section_gaps(ts, dst);
    return reader_->read_now(ts, BlockRange{0, ts.blocks.size()}, dst, ts.offset, ts.length, staging);
  }
  io_.read_now({ReadEngine::Read{trunk_file_, ts.stored_offset, ts.length, ts.length, dst}});
  const std::string bad = check_raw_blocks(ts, BlockRange{0, ts.blocks.size()}, dst, ts.offset, ts.length,
                                           sec.block_ok.get(), trunk_file_->path());
  if (!bad.empty()) throw Error(ExitCode::kBadModel, bad);
  return ts.length;
}

void TrunkStream::hold_layers(bool lend_pinned, uint64_t hold_limit) {
  if (!trunk_file_) throw Error(ExitCode::kInternal, "a held chunk without a packed trunk");
  hold_limit_ = hold_limit ? hold_limit : UINT64_MAX;
  // The buffer: the largest layer section it takes (the plan's hold_bytes,
  // with the decode staging read_section_whole takes for a compressed one).
  // A section over the limit is not taken: a pinned one stays pinned, a
  // streamed one streams in row blocks (acquire_skipped_layer).
  uint64_t largest = 0;
  for (int s : layer_section_) {
    Section& sec = *sections_[s];
    if (sec.ts->length > hold_limit_) continue;
    if (sec.pinned && lend_pinned) {
      sec.buf = AlignedBuffer();  // freed before the hold buffer is taken
      sec.lw = LayerWeights{};
      sec.pinned = false;
      sec.lent = true;
    }
    if (!sec.pinned) largest = std::max(largest, sec.ts->length);
  }
  lend_stream_buffers(false);
  hold_size_ = largest;
  hold_buf_ = AlignedBuffer(largest);
  hold_section_ = -1;
  holding_ = true;
}

// Every stream buffer but the first is lent: its read (a read ahead)
// finishes and its unit is dropped; the head's blocks use the first. After
// a skipped layer (`after_skipped`) only the units of that layer not yet
// acquired count as dropped: the others were used.
void TrunkStream::lend_stream_buffers(bool after_skipped) {
  while (buffers_.size() > 1) {
    std::unique_ptr<StreamBuffer> b = std::move(buffers_.back());
    buffers_.pop_back();
    wait_buffer(*b);
    const bool unused = !after_skipped || (last_acquired_ >= 0 && b->unit > last_acquired_ &&
                                           units_[b->unit].section == units_[last_acquired_].section);
    if (b->unit >= 0 && unused) {
      std::lock_guard<std::mutex> lk(stats_mu_);
      stats_.dropped_ahead_bytes += b->read_bytes;
    }
    b->buf = AlignedBuffer();
    b->unit = -1;
    b->held = false;
    lent_buffers_.push_back(std::move(b));
  }
}

void TrunkStream::free_hold_buffer() {
  hold_section_ = -1;
  hold_lw_ = LayerWeights{};
  hold_buf_ = AlignedBuffer();
  hold_staging_ = AlignedBuffer();
}

// The stream buffers lent to the hold, each allocated again at the first
// one's size.
void TrunkStream::take_back_stream_buffers() {
  const uint64_t size = buffers_.empty() ? 0 : buffers_.front()->buf.size();
  for (std::unique_ptr<StreamBuffer>& b : lent_buffers_) {
    b->buf = AlignedBuffer(size);
    buffers_.push_back(std::move(b));
  }
  lent_buffers_.clear();
}

// A streamed layer over the hold limit: the hold buffer is freed (the plan
// counts the larger of it and the lent stream buffers) and the lent stream
// buffers are taken back, so its held part and row blocks pass through them
// as outside a held chunk, read ahead within the layer; the next held layer
// lends them again and takes the hold buffer back.
const LayerWeights& TrunkStream::acquire_skipped_layer(int s) {
  if (!skipping_) {
    free_hold_buffer();
    take_back_stream_buffers();
    skipping_ = true;
  }
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    ++stats_.skipped_layers;
  }
  return acquire_unit(section_unit_[s]).lw;
}

void TrunkStream::end_hold() noexcept {
  if (!holding_) return;
  holding_ = false;
  free_hold_buffer();  // freed before the lent sections are read again
  skipping_ = false;
  take_back_stream_buffers();
  // Decode's first units start while the lent sections are read.
  if (!units_.empty()) read_ahead(last_acquired_, static_cast<int>(buffers_.size()));
  for (int s : layer_section_) {
    if (!sections_[s]->lent) continue;
    try {
      repin_section(s);
    } catch (...) {  // left lent: the layer's next acquire reads it again, and throws
    }
  }
}

void TrunkStream::repin_section(int s) {
  Section& sec = *sections_[s];
  sec.buf = AlignedBuffer(sec.ts->length);
  AlignedBuffer staging;
  const uint64_t read = read_section_whole(sec, sec.buf.data(), staging);
  auto lookup = [&sec, this](const std::string& name) { return section_tensor(sec, sec.buf.data(), name); };
  sec.lw = bind_layer_weights(config_, sec.ts->layer, lookup);
  sec.lent = false;
  sec.pinned = true;
  std::lock_guard<std::mutex> lk(stats_mu_);
  stats_.repinned_bytes += read;
}

const LayerWeights& TrunkStream::acquire_held_layer(int s) {
  if (hold_section_ == s) return hold_lw_;
  const Section& sec = *sections_[s];
  if (skipping_) {  // after a skipped layer: its stream buffers lent again, the hold buffer back
    lend_stream_buffers(true);
    hold_buf_ = AlignedBuffer(hold_size_);
    skipping_ = false;
  }
  if (sec.ts->length > hold_buf_.size())
    throw Error(ExitCode::kInternal, "trunk section " + sec.ts->name + " (" + std::to_string(sec.ts->length) +
                                         " bytes) exceeds the hold buffer of " + std::to_string(hold_buf_.size()));
  hold_section_ = -1;  // its bytes are overwritten from here on
  const auto t0 = SteadyClock::now();
  const uint64_t read = read_section_whole(sec, hold_buf_.data(), hold_staging_);
  const double waited = seconds_since(t0);
  auto lookup = [&sec, this](const std::string& name) { return section_tensor(sec, hold_buf_.data(), name); };
  hold_lw_ = bind_layer_weights(config_, sec.ts->layer, lookup);
  hold_section_ = s;
  std::lock_guard<std::mutex> lk(stats_mu_);
  stats_.io_wait_seconds += waited;
  stats_.trunk_bytes += read;
  stats_.held_bytes += read;
  ++stats_.held_layers;
  return hold_lw_;
}

}  // namespace k3
