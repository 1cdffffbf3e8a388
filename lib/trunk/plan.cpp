#include "trunk/plan.h"

#include <string>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "common/file.h"
#include "common/shape_format.h"
#include "io/aligned_buffer.h"
#include "trunk/codec.h"
#include "trunk/pack_command.h"
#include "trunk/table_check.h"

namespace k3 {

TrunkLayout layout_trunk(const std::vector<ExpectedTensor>& manifest) {
  TrunkLayout t;
  uint64_t pos = 0;
  TrunkSection* cur = nullptr;
  auto close_section = [&] {
    if (cur) {
      pos = align_up(pos);
      cur->length = pos - cur->offset;
      cur->stored_offset = cur->offset;  // stored as laid out until k3-pack --compress says otherwise
      cur->stored_length = cur->length;
    }
  };
  for (const ExpectedTensor& e : manifest) {
    if (e.group == TensorGroup::kRoutedExpert) continue;
    std::string sname = e.group == TensorGroup::kEmbedding ? "embedding"
                        : e.group == TensorGroup::kHead    ? "head"
                                                           : "layer." + std::to_string(e.layer);
    if (!cur || cur->name != sname) {
      close_section();
      t.sections.emplace_back();
      cur = &t.sections.back();
      cur->name = sname;
      cur->layer = e.group == TensorGroup::kLayerTrunk ? e.layer : -1;
      cur->offset = pos;
    }
    TrunkTensor x;
    x.name = e.name;
    x.dtype = e.dtype;
    x.shape = e.shape;
    x.nbytes = dtype_size(e.dtype);
    for (uint64_t d : e.shape) x.nbytes *= d;
    x.offset = align_up(pos);
    pos = x.offset + x.nbytes;
    cur->tensors.push_back(std::move(x));
  }
  close_section();
  t.block_bytes = kTrunkBlockBytes;  // every version 4 section is cut into blocks of this size
  // Sections must be unique: a manifest that interleaves them is a bug.
  for (size_t i = 0; i < t.sections.size(); ++i)
    for (size_t j = i + 1; j < t.sections.size(); ++j)
      if (t.sections[i].name == t.sections[j].name)
        throw Error(ExitCode::kInternal,
                    "trunk section '" + t.sections[i].name + "' is not contiguous in the manifest");
  t.file_size = pos;
  return t;
}

TrunkLayout plan_trunk(const std::vector<ExpectedTensor>& manifest, const Checkpoint& checkpoint) {
  // Every trunk tensor must be in the checkpoint with the dtype and shape the
  // config implies; the layout itself follows from the manifest alone.
  for (const ExpectedTensor& e : manifest) {
    if (e.group == TensorGroup::kRoutedExpert) continue;
    const TensorLocation* loc = checkpoint.find(e.name);
    if (!loc)
      throw Error(ExitCode::kBadModel, checkpoint.dir() + ": tensor '" + e.name + "' (" + dtype_name(e.dtype) + " " +
                                           shape_str(e.shape) + ") is missing from the checkpoint");
    if (loc->info->dtype != e.dtype || loc->info->shape != e.shape)
      throw Error(ExitCode::kBadModel, checkpoint.dir() + ": tensor '" + e.name + "' should be " + dtype_name(e.dtype) +
                                           " " + shape_str(e.shape) + " but is " + dtype_name(loc->info->dtype) + " " +
                                           shape_str(loc->info->shape));
  }
  TrunkLayout t = layout_trunk(manifest);
  for (const TrunkSection& s : t.sections)
    for (const TrunkTensor& x : s.tensors)
      if (checkpoint.at(x.name).info->nbytes != x.nbytes)
        throw Error(ExitCode::kBadModel, checkpoint.dir() + ": tensor '" + x.name + "' holds " +
                                             std::to_string(checkpoint.at(x.name).info->nbytes) +
                                             " bytes where its dtype and shape need " + std::to_string(x.nbytes));
  t.source = fingerprint_checkpoint(checkpoint);
  return t;
}

TrunkLayout open_packed_trunk(const std::string& trunk_dir, const ModelConfig& config, const Checkpoint& checkpoint) {
  TrunkLayout t = open_trunk_layout(trunk_dir, checkpoint);
  const std::string repack = "re-run " + repack_command(t.compressed()) + " " + checkpoint.dir() + " " + trunk_dir;
  check_trunk_table(t, layout_trunk(expected_tensors(config)), path_join(trunk_dir, "trunk.json"), repack);
  return t;
}

}  // namespace k3
