// The tensor table of a packed trunk checked against the layout k3-pack
// writes for the model: trunk.json describes where every byte of trunk.bin
// goes, so an edited or damaged table would make the engine read one tensor
// as another (silently other output) or size a buffer for one range and
// decode another into it. Nothing in trunk.json is trusted for placement:
// the sections and tensors must equal, field by field and in order, the
// layout computed from the model's config (decoded offsets, lengths,
// names, dtypes, shapes, sizes), and the stored side must be exactly what
// k3-pack writes (sections stored back to back in order from byte 0,
// 4096-aligned, raw ones as long as they decode, compressed ones as long as
// their blocks rounded up to 4096, each tensor cut into blocks of
// kTrunkBlockBytes, a raw block stored where it decodes, a compressed one no
// larger than its decoded bytes plus the codec header, trunk.bin ending with
// the last section).
#pragma once

#include <string>

#include "trunk/layout.h"

namespace k3 {

// Throws k3::Error(kBadModel) with one line naming `trunk_json`, the section
// or tensor and the field that differs from `expected` (the layout the
// manifest gives, as layout_trunk makes it), ending in `repack` (what to
// run). Returns when `packed` is a table k3-pack could have written.
void check_trunk_table(const TrunkLayout& packed, const TrunkLayout& expected, const std::string& trunk_json,
                       const std::string& repack);

}  // namespace k3
