// SIGINT and SIGTERM for a server: blocked in every thread (block() runs
// before any thread starts) and taken by one thread with sigwait(), so a
// signal never interrupts the engine or an HTTP handler mid-write.
#pragma once

#include <functional>

namespace k3::serve {

class StopSignal {
 public:
  // Blocks SIGINT and SIGTERM in this thread and every thread started after.
  static void block();
  // Waits for the first of them (the calling thread must have them blocked)
  // and returns its number.
  static int wait();
};

}  // namespace k3::serve
