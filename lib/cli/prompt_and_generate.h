// k3-forward's run once the model is loaded: the prompt as one batch (with
// its progress lines and Ctrl-C), the argmax id of every position under
// --teacher-forcing, then up to `gen` ids generated and written to stdout one
// per line as they exist, with a per-token progress line on a terminal.
#pragma once

#include <cstdint>
#include <vector>

#include "cli/draft_options.h"
#include "engine/model.h"
#include "generate/generation_session.h"

namespace k3 {

// `fed`: the ids the session evaluates (saved pending ids + `prompt`).
// `draft` (--draft; may be null) is started before the prompt, with the
// session's current draft source as its fallback; under --teacher-forcing
// it drafts at every position of the prompt; its log and --stats-json
// figures are written at the end.
GenerationEnd run_prompt_and_generate(GenerationSession& session, Model& model,
                                      const std::vector<int32_t>& prompt, size_t fed, bool teacher_forcing,
                                      int64_t gen, DraftFlags* draft = nullptr, DraftSource* fallback = nullptr);

}  // namespace k3
