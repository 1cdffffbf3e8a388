// Layer trunk: the trunk format end to end (layout, codec, blocks, placement, writer, reader checks).
//
// The trunk is every tensor the engine reads except the routed experts,
// packed by k3-pack into one file so a decode step reads it in large
// sequential pieces: TRUNK_DIR/trunk.bin (the bytes) and trunk.json (where
// each section and tensor sits, per-block hashes, and the fingerprint of
// the checkpoint it came from). This folder owns the format; the runtime's
// TrunkStream (trunk_stream/trunk_stream.h) owns only the buffers and the
// read-ahead that stream it during a pass. Including this header gives the
// whole format; each piece also has its own header:
//
//   layout.h       trunk.json: sections, tensors, blocks, fingerprint; parse and write
//   plan.h         where a model's tensors go (the layout k3-pack writes), opening a packed trunk
//   codec.h        the lossless block codec of a compressed trunk
//   blocks.h       which blocks cover a range, decoding and checking them
//   row_blocks.h   how a streamed layer passes through buffers in row blocks
//   block_reader.h reading and decoding compressed blocks overlapped with the reads
//   table_check.h  a packed tensor table checked against the layout k3-pack writes
//   writer.h       k3-pack: writing trunk.bin + trunk.json, --check, --refresh
//   match.h        whether a trunk directory belongs to a checkpoint (k3-doctor)
//   location.h     where the tools suggest putting a trunk
//
// Contracts
//
// Thread safety. Layouts (TrunkLayout, TrunkSection) are plain values: const
// access from any number of threads is safe, nothing in this folder mutates
// a layout it did not create. The free functions (plan_trunk,
// layout_trunk, parse_trunk_layout, check_trunk_table, blocks_covering,
// decode_blocks, inspect_trunk, ...) keep no state and may run concurrently.
// TrunkBlockEncoder and TrunkBlockDecoder hold a zstd context: one per
// thread. TrunkBlockReader may be called from several threads at once; its
// completions run on the ReadEngine's I/O threads, and the staging buffer a
// call is given must stay untouched until its `done` has run. pack_trunk,
// check_trunk and refresh_trunk are single calls that own their files for
// their duration: two of them on one trunk directory at once are not
// supported (the second may see the first's temporaries).
//
// What fails how. Every refusal is a k3::Error (common/error.h) with one line
// naming the file (trunk.json, trunk.bin or a shard), the section or tensor,
// and what to run (usually the k3-pack command that rewrites the trunk):
//   kBadModel  trunk.json does not parse, is older than the supported
//              version, was packed from another checkpoint, its tensor
//              table is not k3-pack's, trunk.bin has another size, or a
//              block's bytes do not match its hash (a damaged block fails
//              the read; it never yields weights);
//   kIo        a read or write of trunk.bin or a shard failed;
//   kResource  the file system lacks the space for trunk.bin.
// The writer never leaves a trunk that looks valid after an interrupted or
// failed run: trunk.bin is written under a temporary name (created
// exclusively) and renamed, and trunk.json, which makes the trunk usable,
// is written last. The reader trusts nothing in trunk.json for placement:
// the table must equal the layout computed from the model's config.
// inspect_trunk (match.h) reports instead of throwing: it says which check
// failed so k3-doctor can print it.
#pragma once

#include "trunk/block_reader.h"
#include "trunk/blocks.h"
#include "trunk/codec.h"
#include "trunk/layout.h"
#include "trunk/location.h"
#include "trunk/match.h"
#include "trunk/plan.h"
#include "trunk/row_blocks.h"
#include "trunk/table_check.h"
#include "trunk/writer.h"
