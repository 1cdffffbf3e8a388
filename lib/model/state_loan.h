// The sequences' layer states lent to a layer-major chunk
// (ForwardPass::set_state_loan, RunRequest::lend_state): a chunk only touches
// the running layer's KDA state and MLA cache, so every other layer's is in
// a scratch file (io/spill_file.h) while the chunk runs, and the memory it
// held serves the chunk.
//
// The file holds, per sequence and layer, the state as it was before the
// chunk (written when the loan opens, for every layer) and, once the layer
// has run, what the layer changed: a KDA layer's whole state after the chunk
// in a second place, an MLA cache's new rows after its old ones. So the
// state before the chunk stays in the file until the chunk ends, and a stop
// or an error puts every layer back as it was (put_back_before): no copy of
// the KDA states is kept in memory to undo a stopped pass. The bytes are
// the floats as they are (memcpy round trips), so nothing changes; an MLA
// cache whose rows went to the file and back keeps its generation (the same
// rows: a device's copy of them stays valid), and one cut back to the rows
// before the chunk gets a new one (as mla_truncate gives).
//
// The running layer's state is read back just before the layer (bring) and
// written and freed just after it (send), so one layer's state per sequence
// is in memory. It is not read ahead: one layer's state (K3 at 8,192
// positions: 6.3 MB of KDA state or 18.9 MB of MLA rows a sequence) is read
// in milliseconds, against a layer's weights read and computed in seconds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "io/spill_file.h"
#include "model/config.h"
#include "model/sequence_state.h"

namespace k3 {

class StateLoan {
 public:
  // Writes every layer's state of `states` (counts[k] rows of states[k] to
  // come in the chunk) to `file` from offset 0, then frees them all; a
  // failed write (a full disk: kIo) frees nothing. `free_chunk` frees the
  // chunk's memory: called before any state comes back after the chunk
  // (give_back, put_back_before), so the chunk and the lent states never
  // hold memory at once (MemoryPlan::state_lent_bytes).
  StateLoan(const ModelConfig& config, SpillFile& file, std::span<SequenceState* const> states,
            std::span<const size_t> counts, std::function<void()> free_chunk);
  // Not given back (an error, a stop that could not read): every layer as
  // before the chunk (put_back_before). Where even that read fails, each
  // sequence is left empty, as a new one (positions 0, zero KDA states, no
  // MLA rows): whole, never part in the file; the error on its way says why.
  ~StateLoan();
  StateLoan(const StateLoan&) = delete;
  StateLoan& operator=(const StateLoan&) = delete;

  // Before layer `layer` runs: its state before the chunk, back in memory
  // (an MLA cache with room for the chunk's rows). kIo names the file.
  void bring(int layer);
  // After layer `layer` has run (its captures, taps and checks done): what
  // it changed to the file, and its state freed.
  void send(int layer);
  // After the chunk: the chunk's memory freed, then every layer's state after
  // the chunk back in memory.
  void give_back();
  // A stopped or failed chunk: the chunk's memory freed, then every layer's
  // state as before the chunk (KDA states and conv carries, MLA caches cut
  // to their rows before it).
  void put_back_before();

 private:
  enum class Where { kFileBefore, kMemory, kFileAfter };
  // One sequence's layer in the file: its floats (KDA: S, conv_q, conv_k,
  // conv_v; MLA: the latent rows) at `before`, and a KDA layer's state after
  // the chunk at `after` (an MLA cache's new rows follow its old ones).
  struct Slot {
    uint64_t before = 0, after = 0;
    size_t s = 0, cq = 0, ck = 0, cv = 0;  // KDA vectors' floats
    size_t rows_before = 0, rows_after = 0;
  };
  Slot& slot(size_t k, int layer) { return slots_[k * layers_ + static_cast<size_t>(layer)]; }
  void write_kda(const KdaState& s, uint64_t at);
  void read_kda(KdaState& s, const Slot& sl, uint64_t at);
  void free_layer(size_t k, int layer);
  void read_before(size_t k, int layer);
  void make_empty() noexcept;
  void done_with_chunk();

  const ModelConfig& c_;
  SpillFile& file_;
  std::span<SequenceState* const> states_;
  std::function<void()> free_chunk_;
  size_t layers_ = 0, width_ = 0;  // MLA floats a position
  std::vector<Slot> slots_;        // [sequence][layer]
  std::vector<Where> where_;       // [layer]: the same for every sequence
  bool open_ = true, chunk_freed_ = false;
};

}  // namespace k3
