// k3-forward's run once the model is loaded: the prompt as one batch (with
// its progress lines and Ctrl-C), the argmax id of every position under
// --teacher-forcing, then up to `gen` ids generated and written to stdout one
// per line as they exist, with a per-token progress line on a terminal.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model.h"
#include "generate/generation_session.h"

namespace k3 {

// `fed`: the ids the session evaluates (saved pending ids + `prompt`).
GenerationEnd run_prompt_and_generate(GenerationSession& session, Model& model,
                                      const std::vector<int32_t>& prompt, size_t fed, bool teacher_forcing,
                                      int64_t gen);

}  // namespace k3
