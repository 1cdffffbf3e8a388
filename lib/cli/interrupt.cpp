#include "cli/interrupt.h"

#include <signal.h>

namespace k3 {

namespace {

std::atomic<bool> g_interrupted{false};

void on_signal(int sig) {
  g_interrupted = true;
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

void ignore_sigpipe() { ::signal(SIGPIPE, SIG_IGN); }

bool interrupted() { return g_interrupted.load(); }

std::atomic<bool>& interrupt_flag() { return g_interrupted; }

}  // namespace k3
