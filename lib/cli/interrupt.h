// One way for every tool to stop cleanly on Ctrl-C or SIGTERM.
//
// The first SIGINT/SIGTERM only sets a flag: long work polls it between
// units (tokens, sections, files), stops, keeps what it finished (generated
// ids are written, state files saved, partial downloads kept for resuming)
// and the tool exits 130 (ExitCode::kInterrupted). A second signal ends the
// process at once, for a user who does not want to wait.
#pragma once

#include <atomic>
#include <string>

namespace k3 {

// Installs the handler for SIGINT and SIGTERM (idempotent).
void install_interrupt_handler();
// Same, and the first signal writes `message` to stderr at once (from the
// handler: the user sees the key was taken while the work winds down).
// Keeps the message of an earlier call when `message` is empty.
void install_interrupt_handler(const std::string& message);

// "TOOL: stopping within a layer (Ctrl-C again quits at once)" on a line of
// its own, for install_interrupt_handler() of a tool whose passes stop
// within a layer (k3-forward, k3-chat).
std::string stopping_message(const std::string& tool);

// Ignores SIGPIPE, so writing to a closed pipe is a write error (exit 5 with
// a message) rather than a silent death.
void ignore_sigpipe();

// After Ctrl-C stopped one piece of work (a chat reply): clears the flag and
// listens again. A SIGTERM that arrived (its handler is back to the default
// by then) throws Error(kInterrupted) instead: it ends the tool.
void rearm_interrupt();

// Whether a signal arrived; the flag itself, for library calls that poll it.
bool interrupted();
std::atomic<bool>& interrupt_flag();

}  // namespace k3
