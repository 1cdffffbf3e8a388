#include "planning/memory_plan.h"
#include "common/append_printf.h"
#include "common/byte_format.h"
#include "common/checked_math.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "checkpoint/dtype.h"
#include "common/error.h"
#include "common/plural.h"
#include "common/setting_spelling.h"
#include "io/aligned_buffer.h"
#include "model/prefill_chunk.h"
#include "model/tensor_manifest.h"
#include "planning/prefill_forecast.h"
#include "planning/row_block_tables.h"
#include "planning/state_loan_plan.h"
#include "trunk/block_reader.h"
#include "trunk/plan.h"
#include "trunk/row_blocks.h"

namespace k3 {

namespace {

// One sequence's KDA state: per KDA layer, heads x key dim x value dim
// floats of the recurrence and the short conv's last K - 1 rows of q, k and v.
uint64_t kda_state_one(const ModelConfig& c) {
  const uint64_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel;
  return static_cast<uint64_t>(c.num_kda_layers()) * (H * D * D + 3 * (K > 0 ? K - 1 : 0) * H * D) * 4;
}

// The sequences' KDA states, their rollback copies, and a stoppable pass's
// copies to put them back.
uint64_t planned_kda_state_bytes(uint64_t kda_one, const RunRequest& req) {
  const uint64_t seqs = std::max<uint64_t>(1, req.sequences);
  const uint64_t copies = checked_add(req.state_snapshots, plan_stop_copies(req), "the KDA state");
  return checked_mul(kda_one, checked_add(seqs, copies, "the KDA state"), "the KDA state");
}

// --plan's KDA state line: the sequences, and the copies beside them.
std::string describe_kda_state(const ModelConfig& c, const RunRequest& req, uint64_t bytes) {
  std::string parts = plural(std::max<uint64_t>(1, req.sequences), "sequence");
  if (req.state_snapshots > 0) parts += " + " + plural(req.state_snapshots, "rollback copy", "rollback copies");
  if (plan_stop_copies(req) > 0)
    parts += " + " + plural(plan_stop_copies(req), "copy", "copies") + " to put back a stopped pass";
  std::string o;
  if (req.sequences > 1 || parts.find('+') != std::string::npos)
    append_printf(o, "  KDA state         %d layers x (%s)  %s\n", c.num_kda_layers(), parts.c_str(),
                  format_bytes(bytes).c_str());
  else append_printf(o, "  KDA state         %d layers  %s\n", c.num_kda_layers(), format_bytes(bytes).c_str());
  return o;
}

// --plan's kept states line.
std::string describe_kept_states(uint64_t bytes) {
  if (bytes == 0) return "";
  std::string o;
  append_printf(o, "  kept states       conversations between requests (%s)  %s\n",
                spelled(run_setting::kKeptStateBytes).c_str(), format_bytes(bytes).c_str());
  return o;
}

// A held chunk's hold buffer: the largest layer section it takes (the
// streamed ones and the pinned ones lent to it, each at most the request's
// hold limit), and where the trunk is compressed the staging a section's
// decode reads through, as a stream buffer has; and what is lent to it.
void plan_layer_hold(const TrunkLayout& layout, uint64_t hold_limit, MemoryPlan& p) {
  p.hold_limit = hold_limit;
  const uint64_t limit = hold_limit ? hold_limit : UINT64_MAX;
  uint64_t largest = 0;
  for (int s : p.streamed) {
    const TrunkSection& ts = layout.sections[s];
    if (ts.layer < 0) continue;
    if (ts.length <= limit) {
      largest = std::max(largest, ts.length);
      continue;
    }
    ++p.skipped_layers;  // in row blocks, once per piece
    p.skipped_bytes += ts.length;
    p.skipped_read_bytes += ts.stored_length;
  }
  for (int s : p.pinned) {
    const TrunkSection& ts = layout.sections[s];
    if (ts.layer < 0 || ts.length > limit) continue;  // over the limit: stays pinned
    largest = std::max(largest, ts.length);
    p.pinned_lent_bytes += ts.length;
    p.pinned_lent_read_bytes += ts.stored_length;
  }
  p.hold_section_bytes = largest;
  for (const TrunkSection& ts : layout.sections)
    if (ts.layer >= 0 && ts.length < largest) p.hold_next_limit = std::max(p.hold_next_limit, ts.length);
  const uint64_t staging = p.stream_buffers > 0 ? p.stream_staging_bytes / p.stream_buffers : 0;
  p.hold_bytes = checked_add(largest, staging, "the hold buffer");
  // One stream buffer stays for the head's blocks; the others are lent.
  if (p.stream_buffers > 1) p.buffers_lent_bytes = (p.stream_buffers - 1) * p.stream_buffer_size;
  // A skipped layer's row blocks pass through the lent stream buffers, in
  // the hold buffer's memory (freed while such a layer runs).
  if (p.skipped_layers > 0) p.hold_bytes = std::max(p.hold_bytes, p.buffers_lent_bytes);
}

// How often a chunk reads each row block: once per sub-batch, or once per
// chunk where each layer is held whole (the pinned layers lent to the hold
// buffer and read again after the prompt); and the sequence state lent to it.
std::string describe_chunk_reads(const MemoryPlan& p) {
  std::string o;
  if (p.layer_held) {
    append_printf(o, "  layer hold        each streamed layer read whole into a %s buffer per chunk",
                  format_bytes(p.hold_bytes).c_str());
    if (p.skipped_layers > 0)
      append_printf(o, "%s once per %llu rows (the buffer takes layers of at most %s)",
                    skipped_layers_phrase(p).c_str(), (unsigned long long)p.chunk_sub_batch,
                    format_bytes(p.hold_section_bytes).c_str());
    if (p.pinned_lent_bytes > 0)
      append_printf(o, "; the pinned layers' %s lent to it, read again after the prompt",
                    format_bytes(p.pinned_lent_bytes).c_str());
    if (p.buffers_lent_bytes > 0)
      append_printf(o, "; the stream buffers but one (%s) lent to it", format_bytes(p.buffers_lent_bytes).c_str());
    append_printf(o, "; sub-batches of %llu rows\n", (unsigned long long)p.chunk_sub_batch);
  } else if (p.chunk_sub_batch > p.batch) {
    append_printf(o,
                  "  chunk sub-batch   %llu of the chunk's rows through a layer at once: each row block read once per "
                  "%llu tokens (their scratch is in the chunk above)\n",
                  (unsigned long long)p.chunk_sub_batch, (unsigned long long)p.chunk_sub_batch);
  }
  return o + describe_state_loan(p);
}

// The layer-major prefill's chunk and what it carries per token (after the
// batch and the trunk's row blocks are planned).
void plan_chunk(const ModelConfig& c, const TrunkLayout& layout, const RunRequest& req, MemoryPlan& p) {
  p.chunk = std::max(p.batch, req.chunk);
  p.chunk_spilled = req.spill_chunk && p.chunk > p.batch;
  p.chunk_bytes = p.chunk > p.batch
                      ? checked_mul(p.chunk, prefill_chunk_bytes_per_token(c, p.chunk_spilled), "the prefill chunk")
                      : 0;
  // Where the trunk streams in row blocks, a layer's products may take more
  // of the chunk's rows at once than a batch, so each block is read once per
  // that many tokens: their scratch beyond a batch's is the chunk's too.
  // A held chunk's sub-batch is one piece: its row blocks are read once per
  // chunk whatever the sub-batch, and a spilled chunk's block states are then
  // read back once per layer (prefill_forecast.cpp spilled_rows_read).
  p.layer_held = req.hold_layer && p.row_blocks > 0 && p.chunk > p.batch;
  const uint64_t sub_asked = p.layer_held ? std::min<uint64_t>(p.chunk, kChunkPieceRows) : req.chunk_sub_batch;
  p.chunk_sub_batch = p.batch;
  if (p.chunk > p.batch && p.row_blocks > 0 && sub_asked > p.batch) {
    p.chunk_sub_batch = std::min(sub_asked, p.chunk);
    p.chunk_bytes = checked_add(p.chunk_bytes,
                                prefill_sub_batch_scratch_bytes(c, p.chunk_sub_batch, req.context) -
                                    prefill_sub_batch_scratch_bytes(c, p.batch, req.context),
                                "the prefill chunk");
  }
  if (p.chunk_spilled) {
    p.chunk_bytes = checked_add(p.chunk_bytes, prefill_chunk_staging_bytes(c, p.chunk_sub_batch), "the prefill chunk");
    p.spill_file_bytes = checked_mul(p.chunk, spill_file_bytes_per_token(c), "the prefill's spill file");
  }

  if (p.layer_held) plan_layer_hold(layout, req.hold_limit, p);
  plan_state_loan(c, req, p);
}

}  // namespace

uint64_t plan_stop_copies(const RunRequest& req) {
  return req.stoppable_passes ? std::max<uint64_t>(1, req.sequences) : 0;
}

MemoryPlan plan_memory(const ModelConfig& c, const TrunkLayout& layout, uint64_t slot_bytes, const RunRequest& req,
                       const RowBlockTables* tables) {
  MemoryPlan p;
  // Use order: layers, then the head. The embedding is read row by row, or
  // pinned last (below).
  std::vector<int> order;
  int embedding = -1;
  for (int l = 0; l < c.num_hidden_layers; ++l)
    for (size_t s = 0; s < layout.sections.size(); ++s)
      if (layout.sections[s].layer == l) order.push_back(static_cast<int>(s));
  for (size_t s = 0; s < layout.sections.size(); ++s) {
    if (layout.sections[s].name == "head") order.push_back(static_cast<int>(s));
    if (layout.sections[s].name == "embedding") {
      embedding = static_cast<int>(s);
      p.embedding_bytes = layout.sections[s].length;
    }
  }
  // Pin in use order while the budget lasts (every section costs the same
  // I/O per token, so which ones are pinned does not matter, only how many).
  uint64_t largest_layer = 0, largest_streamed_layer = 0;
  int head = -1;
  for (int s : order) {
    const TrunkSection& ts = layout.sections[s];
    const uint64_t len = ts.length;
    if (ts.layer >= 0) largest_layer = std::max(largest_layer, len);
    if (ts.layer < 0) head = s;
    if (!req.packed_trunk || p.pinned_bytes + len <= req.trunk_budget) {
      p.pinned.push_back(s);
      p.pinned_bytes += len;
    } else {
      p.streamed.push_back(s);
      if (ts.layer >= 0) largest_streamed_layer = std::max(largest_streamed_layer, len);
      else p.head_streamed = true;
    }
  }
  // The embedding comes last, and only whole: a token reads one row of it
  // (a streamed layer costs its whole section), so it is pinned only when
  // every layer and the head are and the budget has room left for it all.
  // Then a new token's row is a memory read, not a disk read and a wait.
  if (embedding >= 0 && p.streamed.empty() && p.pinned_bytes + p.embedding_bytes <= req.trunk_budget) {
    p.pinned.push_back(embedding);
    p.pinned_bytes += p.embedding_bytes;
    p.embedding_pinned = true;
  }
  // A streamed head never needs a buffer of its own size: lm_head is read in
  // row blocks through the layers' buffers (the logits of a row depend on that
  // row alone, so blocks change nothing), its small tensors once at start.
  if (p.head_streamed) {
    const TrunkSection& hs = layout.sections[head];
    const TrunkTensor* lm = nullptr;
    for (const TrunkTensor& t : hs.tensors) {
      if (t.name == c.lm_head_name) lm = &t;
      else p.head_small_bytes += align_up(t.nbytes) + kDirectAlign;
    }
    const uint64_t vocab = static_cast<uint64_t>(c.vocab_size), row = static_cast<uint64_t>(c.hidden_size) * 2;
    uint64_t target = req.head_block_bytes ? req.head_block_bytes : req.block_bytes;
    if (target == 0) target = largest_streamed_layer ? largest_streamed_layer : std::min(largest_layer, kHeadBlockCap);
    // Rows per block: a multiple of the rows that span a whole number of
    // 4096-byte pages, so every block of an aligned lm_head starts aligned.
    const uint64_t grain = kDirectAlign / std::gcd(row, kDirectAlign);
    uint64_t rows = target / row / grain * grain;
    rows = std::min(std::max(rows, grain), vocab);
    p.head_block_rows = rows;
    p.head_blocks = (vocab + rows - 1) / rows;
    // Covering read of one block (one extra page when lm_head is not aligned);
    // a head block is read as whole trunk blocks (each checked against its
    // hash, or decoded), up to one more at each end.
    p.head_block_read_bytes = align_up(rows * row) + ((lm && lm->offset % kDirectAlign) ? kDirectAlign : 0);
    if (hs.compressed || layout.block_bytes) p.head_block_read_bytes = align_up(rows * row + 2 * layout.block_bytes);
  }
  // Row blocks: buffers the size of the largest block or held part.
  p.block_bytes = req.block_bytes;
  uint64_t unit_size = largest_streamed_layer;
  if (p.block_bytes) {
    std::string widest;
    const uint64_t floor = min_block_bytes(c, &widest);
    if (p.block_bytes < floor)
      throw Error(ExitCode::kUsage, "a stream block of " + format_bytes(p.block_bytes) + " is less than one row of " +
                                        widest + " (" + std::to_string(floor) + " bytes, the smallest block)");
    unit_size = 0;
    for (int s : p.streamed) {
      if (layout.sections[s].layer < 0) continue;
      const LayerRowBlockSizes rb = row_block_sizes(c, layout, s, p.block_bytes, tables);
      p.held_bytes = std::max(p.held_bytes, rb.held_bytes);
      // A row block is read as whole trunk blocks (to check their hashes, or
      // decode them): up to one more at each end.
      const uint64_t block_buffer = rb.largest_block_bytes + 2 * layout.block_bytes;
      unit_size = std::max({unit_size, rb.held_bytes, block_buffer});
      p.row_blocks += rb.blocks;
    }
  }
  if (!p.streamed.empty()) {
    // Two buffers always (three with row blocks: a layer's held part stays
    // while its blocks pass); more when they fit the prefetch allowance or
    // the trunk budget the pinned sections did not use.
    const int min_buffers = p.block_bytes ? 3 : 2;
    p.stream_buffers = min_buffers;
    const uint64_t size = std::max(unit_size, p.head_block_read_bytes);
    uint64_t spare = req.trunk_budget > p.pinned_bytes ? req.trunk_budget - p.pinned_bytes : 0;
    if (kPrefetchAllowance > min_buffers * size) spare += kPrefetchAllowance - min_buffers * size;
    p.stream_buffers += static_cast<int>(
        std::min<uint64_t>(spare / std::max<uint64_t>(size, 1), std::max(kMaxStreamBuffers - min_buffers, 0)));
    // No more buffers than units pass through them (streamed layers or their
    // parts and blocks, head blocks).
    const uint64_t layers = p.streamed.size() - (p.head_streamed ? 1 : 0);
    const uint64_t units = (p.block_bytes ? layers + p.row_blocks : layers) + p.head_blocks;
    p.stream_buffers = static_cast<int>(std::min<uint64_t>(p.stream_buffers, std::max<uint64_t>(min_buffers, units)));
    p.stream_buffer_size = size;
    p.stream_buffer_bytes = p.stream_buffers * p.stream_buffer_size;
    bool compressed = false;
    uint64_t largest_stored = 0;
    for (int s : p.streamed) {
      largest_stored = std::max(largest_stored, layout.sections[s].stored_length);
      const TrunkSection& ts = layout.sections[s];
      compressed = compressed || ts.compressed;
      if (ts.layer >= 0) {
        p.streamed_read_bytes += ts.stored_length;
        p.streamed_decoded_bytes += ts.length;
        continue;
      }
      for (const TrunkTensor& t : ts.tensors) {
        if (t.name != c.lm_head_name) continue;
        p.streamed_decoded_bytes += t.nbytes;
        if (!ts.compressed) {
          p.streamed_read_bytes += t.nbytes;
          continue;
        }
        for (const TrunkBlock& b : ts.blocks)
          if (b.offset >= t.offset && b.offset < t.offset + t.nbytes) p.streamed_read_bytes += b.stored_size;
      }
    }
    if (compressed)
      p.stream_staging_bytes = p.stream_buffers * TrunkBlockReader::staging_bytes(TrunkBlockReader::piece_bytes_for(
                                                      std::min(largest_stored, p.stream_buffer_size)));
  }

  p.slot_bytes = slot_bytes;
  const bool moe = c.num_hidden_layers > c.first_k_dense_replace;
  p.min_slots = moe ? static_cast<uint64_t>(c.num_experts_per_token) : 0;
  p.chunk_slots = std::min(p.min_slots, kChunkExpertSlots);
  p.cache_slots = slot_bytes ? req.cache_budget / slot_bytes : 0;
  const uint64_t all = moe ? static_cast<uint64_t>(c.num_hidden_layers - c.first_k_dense_replace) * c.num_experts : 0;
  p.cache_slots = std::min(std::max(p.cache_slots, p.min_slots), all);
  p.cache_bytes = checked_mul(p.cache_slots, slot_bytes, "the expert cache");

  const uint64_t H = c.kda_num_heads, D = c.kda_head_dim, kda_one = kda_state_one(c);
  // The terms that grow with a request (--ctx, sequences, rollback copies)
  // rather than the config, whose sizes load_model_config bounds: checked, as
  // is the sum.
  const std::string mla_what = "the MLA latent cache for a context of " + std::to_string(req.context) + " positions";
  const uint64_t mla_one = checked_mul(checked_mul(static_cast<uint64_t>(c.num_mla_layers()), req.context, mla_what),
                                       (static_cast<uint64_t>(c.kv_lora_rank) + c.qk_rope_head_dim) * 4, mla_what);
  const uint64_t seqs = std::max<uint64_t>(1, req.sequences);
  p.per_sequence_bytes = checked_add(kda_one, mla_one, "one sequence's state");
  p.kda_state_bytes = planned_kda_state_bytes(kda_one, req);
  p.mla_cache_bytes = checked_mul(mla_one, seqs, mla_what);

  // Activations of one prefill batch: the residual stream and AttnRes
  // blocks, the widest projections, router scores, logits.
  p.batch = std::max<uint64_t>(1, req.batch);
  const uint64_t n = p.batch, hidden = c.hidden_size;
  const uint64_t blocks = c.attn_res_block_size ? c.num_hidden_layers / c.attn_res_block_size + 2 : 2;
  const uint64_t wide = std::max<uint64_t>(
      {H * D * 8, static_cast<uint64_t>(c.mla_num_heads) * (c.qk_nope_head_dim + c.qk_rope_head_dim + c.v_head_dim) * 3,
       static_cast<uint64_t>(c.intermediate_size) * 3,
       static_cast<uint64_t>(c.moe_intermediate_size) * c.num_shared_experts * 3});
  p.activation_bytes = n * 4 *
                       (hidden * (blocks + 8) + wide + 2 * c.num_experts +
                        c.routed_expert_hidden_size * (2 + c.num_experts_per_token) + c.vocab_size);
  // Attention over the context for one batch row block.
  p.activation_bytes += n * 4 * static_cast<uint64_t>(c.mla_num_heads) * std::min<uint64_t>(req.context, 1u << 16);

  plan_chunk(c, layout, req, p);

  p.io_bytes = 2 * (4u << 20) + req.tensor_count * 160 + (req.io_threads + req.compute_threads) * (8u << 20) / 8 +
               (48u << 20);  // program, libraries, allocator slack
  const std::string draft_what = "the draft model's context for " + std::to_string(req.context) + " positions";
  p.draft_streamed = req.draft.resident > 0 && req.block_bytes > 0 && req.draft.streamed_held > 0;
  // Streamed: one buffer of a block, or of all its matrices when they are smaller.
  const uint64_t draft_held =
      p.draft_streamed
          ? checked_add(req.draft.streamed_held, std::min(req.block_bytes, req.draft.read_per_pass), draft_what)
          : req.draft.resident;
  p.draft_bytes = checked_add(draft_held, checked_mul(req.draft.per_position, req.context, draft_what), draft_what);
  p.kept_state_bytes = req.kept_state_bytes;
  prefill_decode_peak(c, p, req.lend_cache);
  return p;
}

void prefill_decode_peak(const ModelConfig& c, MemoryPlan& p, bool lend) {
  const uint64_t moe_layers = static_cast<uint64_t>(std::max(0, c.num_hidden_layers - c.first_k_dense_replace));
  const bool holds_all = p.cache_slots >= moe_layers * static_cast<uint64_t>(c.num_experts);  // nothing to refill
  const uint64_t kept = p.chunk_slots * p.slot_bytes;                                         // the chunk's own slots
  p.cache_lent_bytes = lend && p.chunk > p.batch && !holds_all && p.cache_bytes > kept ? p.cache_bytes - kept : 0;
  // The lent sequence state (plan_state_loan) is on the lent side too.
  const uint64_t lent =
      checked_add(checked_add(p.cache_lent_bytes, p.pinned_lent_bytes + p.buffers_lent_bytes, "the memory plan"),
                  p.state_lent_bytes, "the memory plan");
  p.peak_rss = std::max(checked_add(p.chunk_bytes, p.hold_bytes, "the memory plan"), lent);
  const uint64_t state = checked_add(p.kda_state_bytes, p.mla_cache_bytes, "the memory plan") - p.state_lent_bytes;
  for (uint64_t part : {p.pinned_bytes - p.pinned_lent_bytes, p.stream_buffer_bytes - p.buffers_lent_bytes,
                        p.stream_staging_bytes, p.head_small_bytes, p.cache_bytes - p.cache_lent_bytes, state,
                        p.activation_bytes, p.draft_bytes, p.kept_state_bytes, p.io_bytes})
    p.peak_rss = checked_add(p.peak_rss, part, "the memory plan");
}

uint64_t expert_slot_bytes(const ModelConfig& c, const std::vector<ExpectedTensor>& manifest) {
  // One expert's tensors are adjacent in the real checkpoint.
  uint64_t expert = 0;
  for (const ExpectedTensor& e : manifest)
    if (e.group == TensorGroup::kRoutedExpert && e.layer == c.first_k_dense_replace && e.expert == 0) {
      uint64_t n = dtype_size(e.dtype);
      for (uint64_t d : e.shape) n *= d;
      expert += n;
    }
  return expert ? align_up(expert) + kDirectAlign : 0;
}

MemoryPlan plan_memory_for_config(const ModelConfig& c, const RunRequest& req, TrunkLayout* layout_out) {
  const std::vector<ExpectedTensor> manifest = expected_tensors(c);
  TrunkLayout layout = layout_trunk(manifest);
  MemoryPlan p = plan_memory(c, layout, expert_slot_bytes(c, manifest), req);
  if (layout_out) *layout_out = std::move(layout);
  return p;
}

std::string MemoryPlan::describe(const TrunkLayout& layout, const ModelConfig& c, const RunRequest& req) const {
  auto count_layers = [&](const std::vector<int>& v, bool* head) {
    int n = 0;
    *head = false;
    for (int s : v) {
      if (layout.sections[s].layer >= 0) ++n;
      else if (layout.sections[s].name == "head") *head = true;
    }
    return n;
  };
  bool pinned_head, streamed_head;
  const int pl = count_layers(pinned, &pinned_head), sl = count_layers(streamed, &streamed_head);
  std::string o;
  append_printf(o, "  pinned trunk      %d of %d layers%s%s  %s\n", pl, c.num_hidden_layers,
                pinned_head ? " + head" : "", embedding_pinned ? " + embedding" : "",
                format_bytes(pinned_bytes).c_str());
  if (stream_buffers) {
    append_printf(o, "  streamed trunk    %d layers%s, %d buffers x %s  %s\n", sl, streamed_head ? " + head" : "",
                  stream_buffers, format_bytes(stream_buffer_size).c_str(), format_bytes(stream_buffer_bytes).c_str());
    if (block_bytes) {
      append_printf(o,
                    "  row blocks        matrices in blocks of at most %s (%llu per token); largest held part "
                    "%s\n",
                    format_bytes(block_bytes).c_str(), (unsigned long long)row_blocks,
                    format_bytes(held_bytes).c_str());
    }
    if (stream_staging_bytes) {
      append_printf(o,
                    "  decode staging    compressed pieces read and decoded as they arrive  %s\n"
                    "  read per token    %s compressed (%s decoded, %.1f%%)\n",
                    format_bytes(stream_staging_bytes).c_str(), format_bytes(streamed_read_bytes).c_str(),
                    format_bytes(streamed_decoded_bytes).c_str(),
                    100.0 * streamed_read_bytes / std::max<uint64_t>(1, streamed_decoded_bytes));
    }
  } else {
    o += "  streamed trunk    none  0 B\n";
  }
  if (head_streamed) {
    append_printf(o,
                  "  head              lm_head in %llu blocks of %llu rows through the stream buffers; "
                  "norms kept  %s\n",
                  (unsigned long long)head_blocks, (unsigned long long)head_block_rows,
                  format_bytes(head_small_bytes).c_str());
  }
  if (embedding_pinned)
    append_printf(o, "  embedding         pinned with the trunk (counted above)  %s\n",
                  format_bytes(embedding_bytes).c_str());
  else
    append_printf(o, "  embedding         rows read on demand (%s on disk)\n", format_bytes(embedding_bytes).c_str());
  append_printf(o, "  expert cache      %llu slots x %s%s  %s\n", (unsigned long long)cache_slots,
                format_bytes(slot_bytes).c_str(),
                cache_slots && cache_slots == min_slots ? " (the floor: one layer's top-k, all in flight)" : "",
                format_bytes(cache_bytes).c_str());
  o += describe_kda_state(c, req, kda_state_bytes);
  if (req.sequences > 1)
    append_printf(o, "  MLA latent cache  %d layers x %llu positions x %llu sequences  %s\n", c.num_mla_layers(),
                  (unsigned long long)req.context, (unsigned long long)req.sequences,
                  format_bytes(mla_cache_bytes).c_str());
  else
    append_printf(o, "  MLA latent cache  %d layers x %llu positions  %s\n", c.num_mla_layers(),
                  (unsigned long long)req.context, format_bytes(mla_cache_bytes).c_str());
  append_printf(o, "  activations       batch of %llu  %s\n", (unsigned long long)batch,
                format_bytes(activation_bytes).c_str());
  if (chunk_bytes > 0 && chunk_spilled)
    append_printf(o,
                  "  prefill chunk     %llu tokens x %s carried from layer to layer, %s of block states and "
                  "shared-expert output in a spill file beside the trunk (%s on disk, not memory) and %s of them "
                  "staged  %s\n",
                  (unsigned long long)chunk, format_bytes(prefill_chunk_bytes_per_token(c, true)).c_str(),
                  format_bytes(spill_file_bytes_per_token(c)).c_str(), format_bytes(spill_file_bytes).c_str(),
                  plural(std::min<uint64_t>(std::max(batch, chunk_sub_batch), kChunkPieceRows), "row").c_str(),
                  format_bytes(chunk_bytes).c_str());
  else if (chunk_bytes > 0)
    append_printf(o, "  prefill chunk     %llu tokens x %s carried from layer to layer  %s\n",
                  (unsigned long long)chunk, format_bytes(prefill_chunk_bytes_per_token(c)).c_str(),
                  format_bytes(chunk_bytes).c_str());
  o += describe_chunk_reads(*this);
  if (draft_bytes > 0 && draft_streamed) {
    append_printf(o,
                  "  draft model       streamed: %s read per draft pass in %s row blocks; held %s + %llu "
                  "positions x %s  %s\n",
                  format_bytes(req.draft.read_per_pass).c_str(), format_bytes(req.block_bytes).c_str(),
                  format_bytes(req.draft.streamed_held + std::min(req.block_bytes, req.draft.read_per_pass)).c_str(),
                  (unsigned long long)req.context, format_bytes(req.draft.per_position).c_str(),
                  format_bytes(draft_bytes).c_str());
  } else if (draft_bytes > 0) {
    append_printf(o, "  draft model       weights and buffers %s + %llu positions x %s  %s\n",
                  format_bytes(req.draft.resident).c_str(), (unsigned long long)req.context,
                  format_bytes(req.draft.per_position).c_str(), format_bytes(draft_bytes).c_str());
  }
  o += describe_kept_states(kept_state_bytes);
  append_printf(o, "  I/O, index, misc  %s\n", format_bytes(io_bytes).c_str());
  append_printf(o, "  forecast peak RSS %s", format_bytes(peak_rss).c_str());
  return o;
}

}  // namespace k3
