#include "cli/prompt_and_generate.h"

#include <functional>

#include "cli/decode_progress.h"
#include "cli/interrupt.h"
#include "cli/prefill_progress.h"
#include "cli/stdout_writer.h"
#include "common/tool_main.h"
#include "sampling/sampler.h"

namespace k3 {

GenerationEnd run_prompt_and_generate(GenerationSession& session, Model& model,
                                      const std::vector<int32_t>& prompt, size_t fed, bool teacher_forcing,
                                      int64_t gen, DraftFlags* draft, DraftSource* fallback) {
  if (draft) draft->start(model.engine(), model.pool(), session, fallback, tool_name(), teacher_forcing);
  PrefillProgress prefill(tool_name());
  std::vector<float> rows;
  session.feed(prompt, teacher_forcing ? &rows : nullptr, std::ref(prefill));
  model.prefill_done();
  prefill.finish();
  const int64_t vocab = model.engine().config().vocab_size;
  if (teacher_forcing)
    for (size_t t = 0; t < fed; ++t) write_token_id_line(greedy_token(rows.data() + t * vocab, vocab));
  if (teacher_forcing && draft) draft->teacher_force(prompt);
  DecodeProgress progress(tool_name(), gen);
  int64_t written = 0;
  const GenerationEnd end = session.generate(
      gen,
      [&](int32_t id) {
        write_token_id_line(id);
        progress.update(++written);
      },
      interrupted);
  progress.finish();
  if (draft) draft->finish(tool_name());
  return end;
}

}  // namespace k3
