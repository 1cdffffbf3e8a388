// How a long start-up step reports how far it is without printing: the
// library calls it, the tool decides what (if anything) reaches the user.
#pragma once

#include <cstdint>
#include <functional>

namespace k3 {

// `what` names the step ("pinning trunk"); `done` of
// `total` bytes are through. Called with done == 0 when a step starts and
// with done == total when it ends; may be empty (nobody listens).
using ProgressCallback = std::function<void(const char* what, uint64_t done, uint64_t total)>;

}  // namespace k3
