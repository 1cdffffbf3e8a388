// What to run after k3-doctor: the exact command line for this machine.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/preset_forecast.h"

namespace k3::doctor {

struct NextStepFacts {
  std::string model_dir;              // as given (empty: the real K3, not on disk yet)
  std::string trunk_dir;              // as given (empty: not packed or not passed)
  bool trunk_ready = false;           // trunk_dir holds a trunk packed from model_dir
  std::optional<std::string> preset;  // the recommended preset; none when nothing fits
  std::string draft_dir;              // --draft, passed on to the run commands (empty: none)
};

// One command per line, in order: download/pack when missing, then a plain
// prompt and a chat (k3-chat) with the recommended preset. Empty when no preset fits.
std::vector<std::string> next_steps(const NextStepFacts& f);

}  // namespace k3::doctor
