#include "cli/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "common/terminal_line.h"

namespace k3 {

namespace {

std::atomic<bool> g_interrupted{false};
// Written by the handler, so it is a fixed buffer set before the handler is.
char g_message[512];
size_t g_message_size = 0;

void on_signal(int sig) {
  g_interrupted = true;
  if (g_message_size > 0) {
    const ssize_t w = ::write(2, g_message, g_message_size);  // async-signal-safe; nothing to do if it fails
    (void)w;
  }
  // A second signal takes the default action: the process ends at once.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
}

}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void install_interrupt_handler(const std::string& message) {
  if (!message.empty()) {
    g_message_size = std::min(message.size(), sizeof g_message);
    std::memcpy(g_message, message.data(), g_message_size);
  }
  install_interrupt_handler();
}

void rearm_interrupt() {
  struct sigaction term {};
  if (sigaction(SIGTERM, nullptr, &term) == 0 && term.sa_handler == SIG_DFL)
    throw Error(ExitCode::kInterrupted, "terminated (SIGTERM)");
  g_interrupted = false;
  install_interrupt_handler();  // the handler gives way to the default after one signal
}

std::string stopping_message(const std::string& tool) {
  return fresh_line(2) + tool + ": stopping within a layer (Ctrl-C again quits at once)\n";
}

void ignore_sigpipe() { ::signal(SIGPIPE, SIG_IGN); }

bool interrupted() { return g_interrupted.load(); }

std::atomic<bool>& interrupt_flag() { return g_interrupted; }

}  // namespace k3
