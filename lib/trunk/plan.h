// Where a model's trunk tensors go in trunk.bin: the layout k3-pack writes
// and the streaming engine and memory plan read (format in
// trunk/layout.h).
#pragma once

#include <vector>

#include "model/config.h"
#include "model/tensor_manifest.h"
#include "trunk/layout.h"

namespace k3 {

class Checkpoint;

// Lays out every non-routed-expert tensor of `manifest` after checking that
// the checkpoint holds each one with the expected dtype and shape (kBadModel
// naming the tensor, the expected and the found). Hashes are not filled in.
TrunkLayout plan_trunk(const std::vector<ExpectedTensor>& manifest, const Checkpoint& checkpoint);

// The same layout from the manifest's dtypes and shapes alone, for plans made
// without the weights (no fingerprint, no hashes).
TrunkLayout layout_trunk(const std::vector<ExpectedTensor>& manifest);

// How the engine opens a packed trunk: open_trunk_layout (trunk.json parses,
// belongs to `checkpoint`, trunk.bin has the recorded size), then its tensor
// table checked against layout_trunk of `config`'s manifest
// (check_trunk_table). Throws k3::Error(kBadModel) naming trunk.json, the
// section or tensor, and the k3-pack command that rewrites the trunk.
TrunkLayout open_packed_trunk(const std::string& trunk_dir, const ModelConfig& config, const Checkpoint& checkpoint);

}  // namespace k3
