// The check every flag that names a file or directory takes: an empty name
// (--draft "", a variable that was never set) is refused, naming the flag,
// instead of reading as "not given" and silently running without it.
//
// Header-only: CLI11 stays a dependency of the tools alone.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace k3::cli {

inline CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        return input.empty() ? "needs a file or directory name, and an empty one was given" : std::string();
      },
      "PATH");
}

}  // namespace k3::cli
