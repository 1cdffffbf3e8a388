#include "batch_run.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "checkpoint/checkpoint.h"
#include "cli/batch_output.h"
#include "cli/interrupt.h"
#include "cli/model_run.h"
#include "cli/prefill_progress.h"
#include "cli/token_id_reader.h"
#include "common/byte_format.h"
#include "common/error.h"
#include "common/file.h"
#include "common/tool_main.h"

namespace k3 {

void check_batch_alone(const std::string& batch_file, std::initializer_list<const std::string*> inputs,
                       bool other_flags) {
  if (batch_file.empty()) return;
  for (const std::string* in : inputs) other_flags = other_flags || !in->empty();
  if (other_flags)
    throw Error(ExitCode::kUsage,
                "--batch runs its own prompts: it takes none of --ids, --state-in/out, "
                "--logits, --teacher-forcing, --recompute, --spec, --predict");
}

std::vector<std::vector<int32_t>> read_batch_file(const std::string& path, int64_t vocab_size) {
  // A regular file, a pipe, FIFO or <(...) read to its end, or - for stdin;
  // devices, directories and sockets are refused (see read_input).
  std::vector<std::vector<int32_t>> lines = parse_token_id_lines(read_input(path, "--batch file"), path, vocab_size);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty())
    throw Error(ExitCode::kBadInput,
                path + ": no prompts (one line of ids per prompt, e.g. from k3-tokenize --format=line)");
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].empty())
      throw Error(ExitCode::kBadInput,
                  path + " line " + std::to_string(i + 1) + ": an empty prompt (every line needs ids)");
  return lines;
}

int run_batch(const ModelConfig& config, ModelOptions& mo, const GenerationOptions& options,
              const std::vector<std::vector<int32_t>>& prompts, int64_t max_new) {
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  mo.stream.sequences = prompts.size();
  const std::unique_ptr<Model> model =
      load_model(config, Checkpoint::open(mo.model_dir), mo, longest + static_cast<uint64_t>(max_new),
                 std::clamp<uint64_t>(std::max(longest, prompts.size()), 1, 256));
  ignore_sigpipe();  // a closed pipe becomes a write error, reported as such
  install_interrupt_handler();
  std::vector<Session> sessions;
  sessions.reserve(prompts.size());  // ptrs point into it
  std::vector<Session*> ptrs;
  GenerationCounters total;
  uint64_t prompt_ids = 0;
  for (const std::vector<int32_t>& p : prompts) {
    Session& s = sessions.emplace_back(model->session(options));
    PrefillProgress progress(tool_name());
    s.prefill(p, std::ref(progress));
    progress.finish();
    ptrs.push_back(&s);
    prompt_ids += p.size();
    total.prefill_seconds += s.counters().prefill_seconds;
  }
  model->prefill_done();
  OrderedLines out(prompts.size());
  bool interrupted_any = false;
  const int64_t passes = model->decode_together(
      ptrs, max_new, [&](size_t i, int32_t id) { out.add(i, id); },
      [&](size_t i, GenerationEnd why) {
        interrupted_any |= why == GenerationEnd::kInterrupted;
        out.finish(i);
      },
      interrupted);
  for (const Session& s : sessions) {
    total.generated += s.counters().generated;
    total.decode_steps += s.counters().decode_steps;
  }
  total.generate_passes = total.weight_passes = passes;
  total.decode_seconds = sessions.empty() ? 0 : sessions[0].counters().decode_seconds;
  report_run(*model, mo, total, prompt_ids);
  std::fprintf(
      stderr,
      "%s: batch of %zu prompts (%llu prompt tokens); %lld generated in %lld weight passes (%.2f tokens/pass), "
      "%.3f s; %d threads; peak RSS %s\n",
      tool_name(), prompts.size(), static_cast<unsigned long long>(prompt_ids), static_cast<long long>(total.generated),
      static_cast<long long>(total.weight_passes),
      total.weight_passes ? static_cast<double>(total.generated) / total.weight_passes : 0.0, total.decode_seconds,
      model->pool().size(), format_bytes(peak_rss_bytes()).c_str());
  if (interrupted_any || interrupted()) {
    std::fprintf(stderr, "%s: interrupted; the lines written so far are complete up to the interruption\n",
                 tool_name());
    return static_cast<int>(ExitCode::kInterrupted);
  }
  return 0;
}

}  // namespace k3
