#include "trunk/row_blocks.h"

#include <algorithm>
#include <unordered_map>

#include "common/error.h"
#include "io/aligned_buffer.h"
#include "io/direct_file.h"
#include "trunk/pack_command.h"

namespace k3 {

uint64_t row_block_buffer_bytes(uint64_t rows, uint64_t row_bytes) {
  return align_up(rows * row_bytes) + kDirectAlign;  // one more page when the block starts mid-page
}

uint64_t min_block_bytes(const ModelConfig& c, std::string* what) {
  uint64_t best = static_cast<uint64_t>(c.hidden_size) * 2;
  if (what) *what = c.lm_head_name;
  for (int l = 0; l < c.num_hidden_layers; ++l)
    for (const RowMatrix& m : layer_row_matrices(c, l))
      if (static_cast<uint64_t>(m.cols) * 2 > best) {
        best = static_cast<uint64_t>(m.cols) * 2;
        if (what) *what = m.name;
      }
  return best;
}

LayerRowBlocks layer_row_blocks(const ModelConfig& c, const TrunkSection& section, uint64_t block_bytes) {
  LayerRowBlocks out;
  std::unordered_map<std::string, const TrunkTensor*> by_name;
  for (const TrunkTensor& t : section.tensors) by_name[t.name] = &t;
  std::unordered_map<std::string, bool> streamed;
  const std::vector<RowMatrix> row_matrices = layer_row_matrices(c, section.layer);
  for (const RowMatrix& m : row_matrices) {
    auto it = by_name.find(m.name);
    if (it == by_name.end())
      throw Error(ExitCode::kBadModel,
                  "trunk section " + section.name + " lacks tensor '" + m.name + "' " + rerun_pack_hint());
    StreamedMatrix s;
    s.tensor = it->second;
    s.shape = m;
    s.row_bytes = static_cast<uint64_t>(m.cols) * 2;
    if (block_bytes < s.row_bytes)
      throw Error(ExitCode::kUsage, "a stream block of " + std::to_string(block_bytes) +
                                        " bytes is less than one row of " + m.name + " (" +
                                        std::to_string(s.row_bytes) + " bytes)");
    s.block_rows = std::min<uint64_t>(block_bytes / s.row_bytes, static_cast<uint64_t>(m.rows));
    out.matrices.push_back(s);
    streamed[m.name] = true;
  }
  auto held_read = [](const TrunkTensor& t) { return covering_read(t.offset, t.nbytes).length; };
  uint64_t held = 0;
  for (const TrunkTensor& t : section.tensors)
    if (!streamed.count(t.name)) held += held_read(t);
  // Matrices that fit in the block budget beside the held part join it,
  // smallest first: one read instead of one per matrix, and no buffer grows.
  std::vector<size_t> by_size(out.matrices.size());
  for (size_t i = 0; i < by_size.size(); ++i) by_size[i] = i;
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](size_t a, size_t b) { return out.matrices[a].tensor->nbytes < out.matrices[b].tensor->nbytes; });
  for (size_t i : by_size) {
    const uint64_t bytes = held_read(*out.matrices[i].tensor);
    if (held + bytes > block_bytes) break;
    held += bytes;
    streamed.erase(out.matrices[i].shape.name);
  }
  std::vector<StreamedMatrix> rest;
  for (const StreamedMatrix& m : out.matrices)
    if (streamed.count(m.shape.name)) {
      out.largest_block_bytes = std::max(out.largest_block_bytes, row_block_buffer_bytes(m.block_rows, m.row_bytes));
      rest.push_back(m);
    }
  out.matrices = std::move(rest);
  for (const TrunkTensor& t : section.tensors) {
    if (streamed.count(t.name)) continue;
    HeldTensor h;
    h.tensor = &t;
    const CoveringRead r = covering_read(t.offset, t.nbytes);
    h.read_offset = r.offset;
    h.read_length = r.length;
    h.skip = r.skip;
    h.buffer_offset = out.held_bytes;
    out.held_bytes += r.length;
    out.held.push_back(h);
  }
  return out;
}

}  // namespace k3
