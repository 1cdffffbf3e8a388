// The field checks the API fronts share (Chat Completions, Responses,
// Anthropic Messages): a refusal names the field (ApiError 400,
// "messages[0].content[1].type: ..."), and an object may hold only the
// members a front implements, so a field it does not know is refused by
// name instead of being ignored.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "common/json_value.h"

namespace k3::serve {

[[noreturn]] void refuse_field(const std::string& field, const std::string& what);

// " (found a number)": what a value of the wrong kind was.
std::string found_kind(const JsonValue& v);

// obj's member `key` where present and not null; nullptr otherwise (JSON
// null means "not given" in these APIs).
const JsonValue* present(const JsonValue& obj, const char* key);

bool is_number(const JsonValue& v);
// A number's value (an integer's text read as a double).
double number_of(const JsonValue& v);

// An integer field within [lo, hi]; refuses floats, even without a fraction.
int64_t integer_in(const JsonValue& v, const std::string& field, int64_t lo, int64_t hi);

// Refuses the first member of `obj` not in `allowed`, naming it as PATH.KEY.
void only_keys(const JsonValue& obj, const std::string& path, std::initializer_list<const char*> allowed);

}  // namespace k3::serve
