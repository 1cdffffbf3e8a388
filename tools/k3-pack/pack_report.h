// What k3-pack prints after --refresh and --check: every problem, then one
// line that says what to do next. Kept apart from the tool's main so the
// main stays a list of steps.
#pragma once

#include <string>

#include "trunk/trunk.h"

namespace k3 {

// Reports a --refresh (problems, changed shards recorded, a format upgrade, or
// nothing to do). Returns the exit status: 0, or kVerify's when a trunk
// tensor differs.
int report_trunk_refresh(const TrunkCheck& r, const std::string& trunk_dir, const std::string& model_dir);

// Reports a --check's problems; returns kVerify's status when there are any,
// else 0 (the caller prints the match).
int report_trunk_check_problems(const TrunkCheck& r, const std::string& trunk_dir, const std::string& model_dir);

}  // namespace k3
