// TrunkStream's private parts, shared by its files: trunk_stream.cpp
// (sections, units, buffers, read-ahead, binding), trunk_unit_read.cpp
// (what one unit reads from trunk.bin and how it is checked) and
// trunk_layer_hold.cpp (a chunk's layers read whole into one buffer).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "trunk/row_blocks.h"
#include "trunk_stream/trunk_stream.h"

namespace k3 {

// A streamed matrix's view: its row blocks pass through the stream buffers.
class TrunkStream::BlockedMatrix : public MatrixRows {
 public:
  BlockedMatrix(TrunkStream* ts, int first_unit, int units, int64_t cols)
      : ts_(ts), first_(first_unit), units_(units), cols_(cols) {}
  void for_each_block(const Block& on_block) const override { ts_->for_each_rows(first_, units_, cols_, on_block); }

 private:
  TrunkStream* ts_;
  int first_, units_;
  int64_t cols_;
};

struct TrunkStream::Section {
  const TrunkSection* ts = nullptr;
  bool pinned = false;
  // A pinned layer section lent to a held chunk (TrunkStream::hold_layers):
  // its buffer freed for the chunk, read again at end_hold (or, where that
  // read failed, when the layer is next asked for, which then fails).
  bool lent = false;
  // A raw section of a packed trunk: one flag per block, set once the block
  // matched its hash in this run (every read checks the blocks not yet set).
  std::unique_ptr<std::atomic<bool>[]> block_ok;
  AlignedBuffer buf;                              // pinned bytes
  std::unordered_map<std::string, uint64_t> rel;  // tensor name -> offset from section start
  LayerWeights lw;
  HeadWeights hw;
  // Row-block mode: the held part's unit, the layout of its parts and one
  // view per streamed matrix.
  int held_unit = -1;
  LayerRowBlocks rb;
  std::unordered_map<std::string, uint64_t> held_rel;  // tensor name -> offset in the held part's buffer
  std::vector<std::unique_ptr<BlockedMatrix>> views;
  std::unordered_map<std::string, Bf16Matrix> view_of;  // matrix name -> its view
};

struct TrunkStream::StreamBuffer {
  AlignedBuffer buf;
  int unit = -1;
  uint64_t skip = 0;        // the unit's bytes start at buf + skip
  uint64_t read_bytes = 0;  // what the unit's read took from trunk.bin
  bool held = false;
  bool pending = false;  // a read was issued; `done` says whether it finished
  std::mutex mu;
  std::condition_variable cv;
  bool done = true;
  std::string error;
  bool corrupt = false;   // `error` is a section hash mismatch or a damaged block, not a failed read
  AlignedBuffer staging;  // compressed pieces on their way into buf
  LayerWeights lw;
};

}  // namespace k3
