#include "serve/stop_signal.h"

#include <pthread.h>
#include <signal.h>

namespace k3::serve {

namespace {
sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

void StopSignal::block() {
  const sigset_t set = stop_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int StopSignal::wait() {
  const sigset_t set = stop_set();
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {}
  return sig;
}

}  // namespace k3::serve
