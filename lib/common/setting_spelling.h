// How the user of a front end names the settings and commands a library
// message points to. The library names each by its key, the name it has in
// the library (a RunRequest field such as "trunk_gb", a function such as
// "pack_trunk"); the front end in use installs a speller that turns keys into
// what its users type (the command-line tools' cli/flag_spellings.h: the flag
// "--trunk-gb", the tool "k3-pack"), so a refusal names what the user wrote.
// A program embedding the library without one reads the keys.
#pragma once

#include <string>
#include <string_view>

namespace k3 {

// The spelling of `key` in a front end, or nullptr for a key it does not know.
using SettingSpeller = const char* (*)(std::string_view key);

// Installs `speller` for the whole process (nullptr: the keys themselves);
// set once where a front end starts, before any message is made.
void set_setting_speller(SettingSpeller speller);

// `key` as the installed speller spells it; the key itself without one, or
// when the speller does not know it.
std::string spelled(std::string_view key);

}  // namespace k3
