// Command-line parsing with the conventions every k3 tool documents:
// --help prints the help and exits 0; --version prints the version and the
// kernel target and exits 0 before anything else is checked; a bad flag or argument prints one line
// naming it and exits 2 (kUsage), never CLI11's own exit codes.
//
// Header-only. CLI11 is used by lib/cli (the flags of each tool's options)
// and the tools; no layer below cli includes it.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "cli/flag_spellings.h"
#include "cli/flag_suggestion.h"
#include "cli/tool_version.h"
#include "common/error.h"

namespace k3 {

namespace cli_detail {

// K3_FLAG_DEFAULTS=1 (tests only: tests/cli/help_defaults_test.sh): each
// flag's kind and value as the code holds it before parsing,
// "[SUBCOMMAND ]--flag<TAB>KIND<TAB>value" per line on stdout (KIND: switch
// for a flag without a value, required, or optional; value "" for a flag
// with no value of its own to show), so the test compares every default a
// --help states with the code's, and finds a flag taking a value whose help
// states neither a default nor that it has none.
inline void print_flag_defaults(CLI::App& app, const std::string& prefix) {
  for (CLI::Option* o : app.get_options()) {
    if (o->get_lnames().empty()) continue;
    o->capture_default_str();
    const char* kind = o->get_expected_max() == 0 ? "switch" : o->get_required() ? "required" : "optional";
    std::printf("%s--%s\t%s\t%s\n", prefix.c_str(), o->get_lnames().front().c_str(), kind,
                o->get_default_str().c_str());
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    print_flag_defaults(*sub, prefix + sub->get_name() + " ");
}

inline void collect_flags(const CLI::App& app, std::vector<std::string>& out) {
  for (const CLI::Option* o : app.get_options())
    for (const std::string& name : o->get_lnames()) out.push_back("--" + name);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) collect_flags(*sub, out);
}

// The first "--flag" of argv that no option of the app (or a subcommand)
// takes, with the nearest known flag if it looks like a typo of one.
inline std::string unknown_flag_message(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> known;
  collect_flags(app, known);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) continue;
    const std::string name = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    const std::string near = cli::closest_flag(name, known);
    return "unknown flag " + name + (near.empty() ? std::string() : "; did you mean " + near + "?");
  }
  return std::string();
}

// "Could not convert: --gen = 1.5" -> "--gen: '1.5' is not a whole number".
inline std::string conversion_message(const CLI::App& app, const std::string& what) {
  const std::string prefix = "Could not convert: ";
  const size_t eq = what.find(" = ");
  if (what.compare(0, prefix.size(), prefix) != 0 || eq == std::string::npos) return what;
  const std::string name = what.substr(prefix.size(), eq - prefix.size());
  const std::string value = what.substr(eq + 3);
  std::string expected = "a valid value";
  if (const CLI::Option* o = app.get_option_no_throw(name)) {
    const std::string type = o->get_type_name();  // "INT", "UINT:>= 1", "FLOAT", ...
    if (type.rfind("INT", 0) == 0) expected = "a whole number";
    if (type.rfind("UINT", 0) == 0) expected = "a whole number, 0 or more";
    if (type.rfind("FLOAT", 0) == 0) expected = "a number";
  }
  return name + ": '" + value + "' is not " + expected;
}

}  // namespace cli_detail

// Parses argv into `app`. Returns the exit status when the tool should stop
// now (help shown, or a usage error), nothing when it should go on.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const char* tool) {
  app.add_flag_callback(
      "--version", [] {}, "print the version and the kernel target, then exit");
  if (auto status = answer_version_flag(argc, argv, tool)) return status;
  cli::use_flag_spellings();  // library messages from here on name the flags
  if (const char* v = std::getenv("K3_FLAG_DEFAULTS"); v && std::string(v) == "1") {
    cli_detail::print_flag_defaults(app, "");
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // An unknown flag is taken for an extra positional argument by CLI11
    // ("not expected", "at most 2 required"): name the flag instead.
    std::string message;
    if (dynamic_cast<const CLI::ExtrasError*>(&e) || dynamic_cast<const CLI::ArgumentMismatch*>(&e))
      message = cli_detail::unknown_flag_message(app, argc, argv);
    if (dynamic_cast<const CLI::ConversionError*>(&e)) message = cli_detail::conversion_message(app, e.what());
    if (message.empty()) message = e.what();
    std::fprintf(stderr, "%s: %s (see %s --help)\n", tool, message.c_str(), tool);
    return static_cast<int>(ExitCode::kUsage);
  }
  return std::nullopt;
}

}  // namespace k3
