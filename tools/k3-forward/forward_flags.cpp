#include "forward_flags.h"

#include "batch_run.h"
#include "cli/flag_checks.h"
#include "common/error.h"
#include "common/file.h"

namespace k3 {

void ForwardFlags::add_run_flags(CLI::App& app) {
  app.add_option("--tok", tok_dir,
                 "Tokenizer directory the ids come from: refuse to run when its vocabulary or special tokens "
                 "disagree with the model's config (default: none: not checked)");
  app.add_option("--ids", ids_file,
                 "Read the prompt ids from FILE instead of stdin (- is stdin; pipes are read to the end; default: "
                 "none: stdin)");
  app.add_option("--batch", batch_file,
                 "Decode the prompts of FILE (one line of ids each) together, one weight pass "
                 "per step; writes one line of ids per prompt, in order (default: none)");
  app.add_option("--gen", gen, "Generate up to N tokens after the prompt (default 0: only run the prompt)")
      ->check(cli::non_negative());
  app.add_flag("--ignore-eos", ignore_eos, "Keep generating past an EOS id");
  app.add_flag("--recompute", recompute,
               "Recompute the whole prefix for every new token (slow reference path; same ids)");
  app.add_option("--logits", logits_file,
                 "Write the logits of every evaluated position to FILE (safetensors, tensor "
                 "'logits' F32 [positions, vocab]; written atomically; default: none: not written)");
  app.add_flag("--teacher-forcing", teacher_forcing,
               "Evaluate the given ids without generating; writes the argmax id of every position to stdout");
}

void ForwardFlags::add_state_flags(CLI::App& app) {
  app.add_option("--stop-id", stop_ids, "Stop generating after this id (repeatable; default: none: EOS only)")
      ->allow_extra_args(false);
  app.add_option("--state-in", state_in,
                 "Continue the conversation saved in FILE: the ids on stdin are appended to the "
                 "saved context (sampling flags not given keep the saved settings; default: none: a new one)");
  app.add_option("--state-out", state_out,
                 "Save the conversation to FILE after the run (written atomically; also when interrupted; default: "
                 "none: not saved)");
}

void ForwardFlags::check(bool speculating) const {
  if (teacher_forcing && gen > 0)
    throw Error(ExitCode::kUsage, "--teacher-forcing evaluates the given ids and cannot be combined with --gen");
  if (recompute && speculating)
    throw Error(ExitCode::kUsage, "--recompute is the one-id-per-pass reference path: drop --spec/--predict/--draft");
  check_batch_alone(batch_file, {&ids_file, &state_in, &state_out, &logits_file},
                    teacher_forcing || recompute || speculating);
  // Outputs may be files (replaced whole) or devices/FIFOs (written through).
  for (const std::string* out : {&logits_file, &state_out})
    if (!out->empty()) check_output_path(*out, OutputPolicy::kFileOrStream);
}

}  // namespace k3
