// The command-line spelling of every setting and command the library names
// in its messages (common/setting_spelling.h): the flag a tool takes for a
// setting ("trunk_gb" -> "--trunk-gb") and the tool that runs a library
// command ("pack_trunk" -> "k3-pack"). Written once here, so a refusal made
// in runtime/ names the flag the user typed, and a program embedding the
// library reads the settings' own names.
#pragma once

#include <string_view>

namespace k3::cli {

// The flag or tool for `key`; nullptr for a key the command line does not spell.
const char* flag_spelling(std::string_view key);

// Installs flag_spelling as the process's setting speller; every tool does
// so when it parses its command line (cli/cli_parse.h).
void use_flag_spellings();

}  // namespace k3::cli
