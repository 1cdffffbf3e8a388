// The commands that write a trunk again, as messages name them: the packer
// (common/command_keys.h) spelled by the front end in use, with its compress
// option for a compressed trunk.
#pragma once

#include <string>

#include "common/command_keys.h"
#include "common/setting_spelling.h"

namespace k3 {

// "k3-pack", or "k3-pack --compress" for a compressed trunk: the command that
// writes the trunk again.
inline std::string repack_command(bool compressed) {
  return spelled(kPackTrunk) + (compressed ? " " + spelled(kCompressTrunk) : std::string());
}

// "(re-run k3-pack)": how a message about a trunk that is damaged or not what
// the packer writes ends.
inline std::string rerun_pack_hint(bool compressed = false) { return "(re-run " + repack_command(compressed) + ")"; }

}  // namespace k3
