// The checks every part of an Anthropic request shares: a refusal names the
// field (ApiError 400, "messages[0].content[1].type: ..."), and an object
// may hold only the members this front implements, so a field it does not
// know is refused by name instead of being ignored.
#pragma once

#include <initializer_list>
#include <string>

#include "common/json_value.h"

namespace k3::serve {

[[noreturn]] void refuse_field(const std::string& field, const std::string& what);

// " (found a number)": what a value of the wrong kind was.
std::string found_kind(const JsonValue& v);

// Refuses the first member of `obj` not in `allowed`, naming it as PATH.KEY.
void only_keys(const JsonValue& obj, const std::string& path, std::initializer_list<const char*> allowed);

}  // namespace k3::serve
