#include "trunk/table_check.h"

#include "common/error.h"
#include "common/shape_format.h"
#include "trunk/codec.h"
#include "trunk/pack_command.h"

namespace k3 {

namespace {
std::string num(uint64_t v) { return std::to_string(v); }
}  // namespace

void check_trunk_table(const TrunkLayout& packed, const TrunkLayout& expected, const std::string& trunk_json,
                       const std::string& repack) {
  auto bad = [&](const std::string& what) {
    throw Error(ExitCode::kBadModel, trunk_json + ": " + what + ": the tensor table is not the one " +
                                         spelled(kPackTrunk) + " writes for this model (edited or damaged); " + repack);
  };
  if (packed.sections.size() != expected.sections.size())
    bad(num(packed.sections.size()) + " sections where this model has " + num(expected.sections.size()));
  const bool compressed = packed.compressed();
  if (packed.block_bytes != kTrunkBlockBytes)
    bad("block_bytes " + num(packed.block_bytes) + " where " + spelled(kPackTrunk) + " writes " +
        num(kTrunkBlockBytes));
  uint64_t stored_end = 0;  // where the previous section's stored bytes end
  for (size_t i = 0; i < expected.sections.size(); ++i) {
    const TrunkSection& p = packed.sections[i];
    const TrunkSection& e = expected.sections[i];
    const std::string where = "section " + num(i) + " ('" + p.name + "')";
    if (p.name != e.name || p.layer != e.layer)
      bad(where + " where section '" + e.name + "' (layer " + std::to_string(e.layer) + ") belongs");
    if (p.offset != e.offset || p.length != e.length)
      bad("section " + p.name + " at offset " + num(p.offset) + ", length " + num(p.length) + " where " +
          spelled(kPackTrunk) + " puts it at " + num(e.offset) + ", length " + num(e.length));
    if (p.tensors.size() != e.tensors.size())
      bad("section " + p.name + " lists " + num(p.tensors.size()) + " tensors where it holds " + num(e.tensors.size()));
    for (size_t j = 0; j < e.tensors.size(); ++j) {
      const TrunkTensor& x = p.tensors[j];
      const TrunkTensor& y = e.tensors[j];
      if (x.name != y.name)
        bad("tensor " + num(j) + " of section " + p.name + " is '" + x.name + "' where '" + y.name + "' belongs");
      if (x.dtype != y.dtype || x.shape != y.shape)
        bad("tensor '" + x.name + "' is " + dtype_name(x.dtype) + " " + shape_str(x.shape) + " where the model's is " +
            dtype_name(y.dtype) + " " + shape_str(y.shape));
      if (x.offset != y.offset || x.nbytes != y.nbytes)
        bad("tensor '" + x.name + "' at offset " + num(x.offset) + " (" + num(x.nbytes) + " bytes) where " +
            spelled(kPackTrunk) + " puts it at " + num(y.offset) + " (" + num(y.nbytes) + " bytes)");
    }
    // The stored side. The embedding is read a row at a time and never
    // compressed; in a compressed trunk every other section is.
    if (p.compressed != (compressed && p.name != "embedding"))
      bad("section " + p.name + (p.compressed ? " is compressed" : " is raw") + ", which " + spelled(kPackTrunk) +
          " never writes in a " + (compressed ? "compressed" : "raw") + " trunk");
    if (p.stored_offset != stored_end)
      bad("section " + p.name + " stored at byte " + num(p.stored_offset) + " where " + spelled(kPackTrunk) +
          " stores it at " + num(stored_end));
    // Every tensor cut into block_bytes pieces, each a block of its own.
    uint64_t blocks = 0;
    for (const TrunkTensor& x : e.tensors) blocks += (x.nbytes + kTrunkBlockBytes - 1) / kTrunkBlockBytes;
    if (p.blocks.size() != blocks)
      bad("section " + p.name + " has " + num(p.blocks.size()) + " blocks where its tensors make " + num(blocks));
    if (p.compressed) {
      uint64_t sum = 0;
      for (size_t b = 0; b < p.blocks.size(); ++b) {
        const TrunkBlock& k = p.blocks[b];
        if (k.stored_size < kTrunkBlockHeaderBytes || k.stored_size > k.size + kTrunkBlockHeaderBytes)
          bad("section " + p.name + " block " + num(b) + " claims " + num(k.stored_size) + " stored bytes for " +
              num(k.size) + " decoded");
        sum += k.stored_size;  // bounded by the section's stored length (place_trunk_blocks)
      }
      if (p.stored_length != (sum + 4095) / 4096 * 4096)
        bad("section " + p.name + " has stored_length " + num(p.stored_length) + " where its blocks take " + num(sum) +
            " bytes");
    } else if (p.stored_length != p.length) {
      bad("raw section " + p.name + " has stored_length " + num(p.stored_length) + " where it is " + num(p.length) +
          " bytes");
    } else {
      for (size_t b = 0; b < p.blocks.size(); ++b)
        if (p.blocks[b].stored_size != p.blocks[b].size ||
            p.blocks[b].stored_offset != p.stored_offset + (p.blocks[b].offset - p.offset))
          bad("raw section " + p.name + " block " + num(b) + " is not stored where it decodes");
    }
    stored_end = p.stored_offset + p.stored_length;
  }
  if (packed.file_size != stored_end)
    bad("file_size " + num(packed.file_size) + " where the sections end at byte " + num(stored_end));
}

}  // namespace k3
