// k3-forward's run once the model is loaded: the prompt as one batch (with
// its progress lines and Ctrl-C), the argmax id of every position under
// --teacher-forcing, then up to `gen` ids generated and written to stdout one
// per line as they exist, with per-token progress where it cannot erase the
// text (cli/decode_progress.h). When it returns, stderr is at the start of a
// line of its own (common/terminal_line.h) for the figures that follow.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/draft_options.h"
#include "cli/generation_extras.h"
#include "engine/model.h"
#include "engine/session.h"
#include "state/continuation.h"

namespace k3 {

// Ctrl-C while k3-forward generates: the first signal says "stopping" at
// once, the weight pass stops within about a
// layer (Session::stop_passes_when_interrupted; with --state-out the
// sequence is put back as it was before that pass, so the saved state
// continues exactly), and a second signal ends the process. Also makes a
// closed stdout a write error instead of SIGPIPE.
void prepare_interrupts(Session& session, const std::string& tool, const std::string& state_out);

// `fed`: the ids the session evaluates (saved pending ids + `prompt`).
// `extras`: --stop and --logprobs (a stop string ends as kStop). `draft`
// (--draft; may be null) is started before the prompt, with `fallback` (the
// session's other draft source) filling in; under --teacher-forcing it drafts
// at every position of the prompt; its log and figures are written at the end.
GenerationEnd run_prompt_and_generate(Session& session, Model& model, const std::vector<int32_t>& prompt, size_t fed,
                                      bool teacher_forcing, int64_t gen, GenerationExtras& extras,
                                      DraftFlags* draft = nullptr, DraftSource* fallback = nullptr);

// Saves the conversation to `state_out` (the session's state is moved out)
// and, after Ctrl-C, says where it went.
void save_state_out(Session& session, const std::string& state_out, const ModelIdentity& identity, const char* tool);

}  // namespace k3
