#include "prompt_and_generate.h"

#include <cstdio>
#include <functional>

#include "cli/decode_progress.h"
#include "cli/interrupt.h"
#include "cli/prefill_progress.h"
#include "cli/stdout_writer.h"
#include "common/terminal_line.h"
#include "common/tool_main.h"
#include "sampling/sampler.h"

namespace k3 {

GenerationEnd run_prompt_and_generate(Session& session, Model& model, const std::vector<int32_t>& prompt, size_t fed,
                                      bool teacher_forcing, int64_t gen, GenerationExtras& extras, DraftFlags* draft,
                                      DraftSource* fallback) {
  if (draft) draft->start(model, session, fallback, tool_name(), teacher_forcing);
  PrefillProgress prefill(tool_name());
  prefill.set_steps({static_cast<int64_t>(prompt.size()), static_cast<int64_t>(model.tokens_per_read()),
                     static_cast<int64_t>(model.max_batch()), model.config().num_hidden_layers});
  std::vector<float> rows;
  session.prefill(prompt, std::ref(prefill), teacher_forcing ? &rows : nullptr);
  model.prefill_done();
  prefill.finish();
  const int64_t vocab = model.config().vocab_size;
  if (teacher_forcing)
    for (size_t t = 0; t < fed; ++t) write_token_id_line(greedy_token(rows.data() + t * vocab, vocab));
  extras.attach(session, vocab);
  if (teacher_forcing && draft) draft->teacher_force(prompt);
  DecodeProgress progress(tool_name(), gen);
  int64_t written = 0;
  GenerationEnd end = session.generate(
      gen,
      [&](int32_t id) {
        for (int32_t out : extras.filter(id)) write_token_id_line(out);
        progress.update(++written);
      },
      [&] { return interrupted() || extras.stopped(); });
  if (extras.stopped() && !interrupted()) end = GenerationEnd::kStop;
  for (int32_t out : extras.finish()) write_token_id_line(out);
  extras.write_logprobs();
  progress.finish();
  if (draft) draft->finish(tool_name());
  // The figures after the text: once a reader such as k3-detok has taken the
  // last id, and on a line of their own whatever column the text ended in.
  wait_for_pipe_reader(1, 500);
  const std::string fresh = fresh_line(2);
  if (!fresh.empty()) std::fputs(fresh.c_str(), stderr);
  return end;
}

void save_state_out(Session& session, const std::string& state_out, const ModelIdentity& identity, const char* tool) {
  session.save_and_release(state_out, identity);
  if (interrupted())
    std::fprintf(stderr, "%s: state saved to %s (continue with --state-in)\n", tool, state_out.c_str());
}

void prepare_interrupts(Session& session, const std::string& tool, const std::string& state_out) {
  ignore_sigpipe();
  // Where the state went is said once it is written (save_state_out): a
  // prompt stopped before any id is generated saves nothing.
  install_interrupt_handler(stopping_message(tool));
  session.stop_passes_when_interrupted(!state_out.empty());
}

}  // namespace k3
