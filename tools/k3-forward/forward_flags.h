// k3-forward's own flags: where the ids come from (--ids, --batch, --tok),
// what to do with them (--gen, --teacher-forcing, --recompute, --stop-id,
// --ignore-eos), what to write besides ids (--logits) and the saved
// conversation (--state-in, --state-out). Declared here, as the shared
// model, sampling and speculation flags are, so the tool's main stays a list
// of steps.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

struct ForwardFlags {
  std::string tok_dir, ids_file, batch_file, logits_file, state_in, state_out;
  std::vector<int32_t> stop_ids;
  int gen = 0;
  bool ignore_eos = false, recompute = false, teacher_forcing = false;

  // The input and output flags (shown first in --help).
  void add_run_flags(CLI::App& app);
  // --stop-id, --state-in and --state-out (shown after the sampling flags).
  void add_state_flags(CLI::App& app);
  // Combinations that cannot run (exit 2), and output paths that cannot be
  // written (before any weight is read). `speculating`: --spec/--predict/--draft.
  void check(bool speculating) const;
};

}  // namespace k3
