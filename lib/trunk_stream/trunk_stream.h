// Layer trunk_stream: the packed trunk at run time (pinned sections, stream buffers, read-ahead).
// The trunk of a model run in a memory budget: the sections of a packed
// trunk (k3-pack) that the plan pins are read once at start; the others stream through a few buffers in use order, the
// next ones read in the background while the current layer computes. A streamed head goes through the same buffers as
// lm_head row blocks (its small tensors are read once and kept), so no buffer is ever the size of the head. Without a
// packed trunk every trunk tensor is read from the shards once and held. Embedding rows are read on demand.
//
// Every raw trunk block (trunk/layout.h, version 4) is checked against its
// xxh3 the first time a read brings it in, on the I/O thread that read it
// (a row or row block whose blocks are not all checked yet is read with its
// blocks whole): a damaged byte fails the read that would hand it out, and
// nothing hashes the trunk before the first token.
//
// A compressed trunk (k3-pack --compress) is read the same way: pinned
// sections are decoded once at start, streamed units are decoded into their
// stream buffer by the I/O threads as their pieces arrive
// (trunk_block_reader.h), so the weights handed out are the same bytes and
// the logits the same bits as with the uncompressed trunk.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/progress_callback.h"
#include "io/aligned_buffer.h"
#include "io/direct_file.h"
#include "io/read_engine.h"
#include "model/config.h"
#include "model/weight_source.h"
#include "planning/memory_plan.h"
#include "trunk/block_reader.h"
#include "trunk/layout.h"

namespace k3 {

class Checkpoint;

struct TrunkStreamStats {
  uint64_t trunk_bytes = 0;      // read while running (streamed sections, embedding rows)
  uint64_t load_bytes = 0;       // pinned sections and a streamed head's small tensors, read at start
  double io_wait_seconds = 0;    // compute thread blocked waiting for trunk bytes
  double decode_seconds = 0;     // CPU seconds the I/O threads spent decoding compressed blocks
  uint64_t units_not_ahead = 0;  // streamed units asked for before any read of them began (out of use order)
  // Held chunks (hold_layers): layer sections read whole into the hold
  // buffer and their bytes as stored (in trunk_bytes too), and the lent
  // pinned sections' bytes read again after the chunks.
  uint64_t held_layers = 0;
  uint64_t held_bytes = 0;
  uint64_t repinned_bytes = 0;
  // Units read ahead into the stream buffers a held chunk takes, dropped
  // unused (read again when decode comes to them): their bytes.
  uint64_t dropped_ahead_bytes = 0;
  // Layers a held chunk did not hold, over its hold limit (MemoryPlan::
  // skipped_layers): streamed in row blocks inside the chunk, counted once
  // a chunk (their bytes in trunk_bytes).
  uint64_t skipped_layers = 0;
};

class TrunkStream {
 public:
  // `trunk_file` is trunk.bin (nullptr: no packed trunk, every section is
  // pinned and gathered from `shard_files`). `layout` is the packed trunk's
  // (or plan_trunk's for the shards) and `plan` the approved memory plan for
  // it. The files and `io` must outlive this object. Throws k3::Error
  // (kBadModel for a block whose hash differs, kIo for read failures).
  // `progress` hears of the start-up reads ("pinning trunk"), section by
  // section.
  TrunkStream(const ModelConfig& config, const Checkpoint& checkpoint, const DirectFile* trunk_file,
              const std::vector<std::unique_ptr<DirectFile>>& shard_files, TrunkLayout layout, const MemoryPlan& plan,
              ReadEngine& io, const ProgressCallback& progress = {});
  ~TrunkStream();  // waits for reads still filling a buffer
  TrunkStream(const TrunkStream&) = delete;
  TrunkStream& operator=(const TrunkStream&) = delete;

  // Starts reading the first streamed units so the first token does not wait
  // for all of them.
  void start_read_ahead();

  void embed(const int32_t* ids, size_t n, float* out);
  const LayerWeights& acquire_layer(int layer);
  void release_layer(int layer);
  const HeadWeights& acquire_head();
  void for_each_head_block(const HeadWeights& head, const WeightSource::HeadBlock& on_block);

  // A layer-major chunk that holds each layer whole (MemoryPlan::layer_held),
  // from hold_layers() until end_hold(): acquire_layer of a streamed layer
  // reads its whole section (checked or decoded as a pinned one) into one
  // buffer the size of the largest such section and binds plain matrices to it, so its row blocks
  // are read once for the chunk however many sub-batches pass;
  // release_layer does nothing. The stream buffers but one are freed for
  // the chunk (MemoryPlan::buffers_lent_bytes): only head blocks pass
  // through the one left, and read-ahead is limited to them (the hold reads
  // the layers itself). With `lend_pinned`, the pinned layer sections'
  // buffers are freed first and those layers go through the hold buffer
  // too. end_hold() frees the hold buffer, takes the stream buffers back,
  // restarts read-ahead and reads the lent sections again (a read that
  // fails there fails when the layer is next asked for: end_hold does not
  // throw, it runs as a chunk is unwound).
  //
  // `hold_limit` (0: none; MemoryPlan::hold_section_bytes): a layer whose
  // section is larger is not held. A pinned one stays pinned; a streamed
  // one streams in row blocks as outside a held chunk, through the stream
  // buffers lent to the hold, taken back while it runs in the memory of the
  // hold buffer, which is freed meanwhile (so its row blocks are read once
  // per sub-batch, and read ahead within the layer).
  void hold_layers(bool lend_pinned, uint64_t hold_limit = 0);
  void end_hold() noexcept;
  bool holding() const { return holding_; }

  TrunkStreamStats stats() const;

 private:
  struct Section;
  struct StreamBuffer;
  class BlockedMatrix;
  // What passes through a stream buffer: a whole layer section; in row-block
  // mode a layer's held part or `rows` rows of one of its matrices from
  // `first_row`; or `rows` rows of lm_head.
  enum class UnitKind : uint8_t { kSection, kHeld, kMatrixRows, kHeadRows };
  struct Unit {
    int section = -1;
    UnitKind kind = UnitKind::kSection;
    int matrix = -1;  // kMatrixRows: index into the section's row blocks
    int64_t first_row = 0, rows = 0;
  };
  void index_sections();
  void plan_stream_units(const MemoryPlan& plan);
  // Where embedding rows are read: trunk.bin, or their shard when there is no packed trunk.
  void open_embedding(const Checkpoint& checkpoint, const std::vector<std::unique_ptr<DirectFile>>& shard_files);
  void pin_section(int s, const Checkpoint& checkpoint, const std::vector<std::unique_ptr<DirectFile>>& shard_files);
  // A packed trunk's section read whole into `dst` (its decoded length):
  // raw, each block checked against its hash; compressed, decoded through
  // `staging`. Returns the bytes read from trunk.bin. Throws k3::Error
  // (kBadModel for a damaged block, kIo for a failed read).
  uint64_t read_section_whole(const Section& sec, uint8_t* dst, AlignedBuffer& staging);
  const LayerWeights& acquire_held_layer(int s);
  const LayerWeights& acquire_skipped_layer(int s);
  void lend_stream_buffers(bool after_skipped);
  void free_hold_buffer();
  void take_back_stream_buffers();
  // A section a held chunk does not hold: streamed, over the hold limit.
  bool skipped(const Section& sec) const;
  void repin_section(int s);
  void plan_head_blocks(int s, const MemoryPlan& plan);
  void plan_row_blocks(int s, const MemoryPlan& plan);
  uint64_t unit_buffer_bytes(const Unit& un) const;
  // Hands units [first, first + count) (consecutive row blocks of one
  // matrix, cols columns) to on_block one at a time.
  void for_each_rows(int first, int count, int64_t cols, const MatrixRows::Block& on_block);
  StreamBuffer& acquire_unit(int u);
  void release_unit(int u);
  struct UnitReads;
  UnitReads plan_unit_reads(StreamBuffer& b, const Unit& un) const;
  void issue_stream_read(StreamBuffer& b, int u, bool urgent);
  void wait_buffer(StreamBuffer& b);
  // Starts background reads of the `count` units after `u` (in use order,
  // wrapping to the next token) into buffers nobody holds or awaits.
  void read_ahead(int u, int count);
  const void* section_tensor(const Section& sec, const uint8_t* base, const std::string& name) const;
  // Where decoded offset `offset` of section `ts` is stored in trunk.bin (a raw section).
  static uint64_t stored_at(const TrunkSection& ts, uint64_t offset) { return ts.stored_offset + (offset - ts.offset); }
  // Decoded bytes [begin, end) of a row-block unit (kMatrixRows, kHeadRows).
  struct RowSpan {
    uint64_t begin = 0, end = 0;
  };
  RowSpan unit_rows(const Unit& un) const;

  ModelConfig config_;
  TrunkLayout layout_;
  const DirectFile* trunk_file_;
  ReadEngine& io_;
  std::unique_ptr<TrunkBlockReader> reader_;  // a compressed trunk's blocks

  std::vector<std::unique_ptr<Section>> sections_;  // parallel to layout_.sections
  std::vector<int> layer_section_;
  int head_section_ = -1, embed_section_ = -1;
  std::vector<Unit> units_;                // streamed units in use order
  std::vector<int> section_unit_;          // section -> its unit, -1 when pinned or the head
  int head_unit0_ = -1;                    // first head block, -1 when the head is pinned
  uint64_t lm_head_offset_ = 0;            // decoded offset (in trunk.bin when stored raw)
  std::vector<AlignedBuffer> head_small_;  // norms of a streamed head
  HeadWeights head_small_hw_;
  std::vector<std::unique_ptr<StreamBuffer>> buffers_;
  int last_acquired_ = -1;  // read-ahead runs ahead of this unit
  // A held chunk (hold_layers): the buffer, its decode staging, the section
  // it holds now (-1: none) and its weights.
  bool holding_ = false;
  AlignedBuffer hold_buf_, hold_staging_;
  std::vector<std::unique_ptr<StreamBuffer>> lent_buffers_;  // freed for the chunk, taken back at end_hold
  int hold_section_ = -1;
  LayerWeights hold_lw_;
  // The hold limit (UINT64_MAX: none), the hold buffer's size, and whether
  // a skipped layer has the lent stream buffers back (the hold buffer freed).
  uint64_t hold_limit_ = UINT64_MAX, hold_size_ = 0;
  bool skipping_ = false;

  const DirectFile* embed_file_ = nullptr;
  uint64_t embed_base_ = 0;
  AlignedBuffer row_buf_;
  mutable std::mutex stats_mu_;
  TrunkStreamStats stats_;
};

}  // namespace k3
