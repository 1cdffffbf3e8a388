// What a /v1/responses request asks of its Response beyond the chat reply it
// amounts to, as Codex asks it:
//   include ["reasoning.encrypted_content"]: a reasoning item carries
//     encrypted_content, for a client that keeps no state on the server
//     (store: false) to send back with the item. k3 has no secret to
//     encrypt with, so it is the reasoning text hex-encoded behind a
//     version tag: opaque to the client, read back exactly (the next
//     prompt renders the same reasoning, so the kept state is continued).
//   tools of type namespace: their functions are served as function tools;
//     a call of one names its namespace in the function_call item.
//   hosted tools left out of the prompt (k3-serve --hosted-tools omit):
//     the Response's omitted_tools lists their types, so the client can
//     tell why a tool it declared was never called.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/json_value.h"

namespace k3::serve {

struct ResponseExtras {
  bool encrypted_reasoning = false;               // include: reasoning.encrypted_content
  std::map<std::string, std::string> namespaces;  // function name -> its namespace tool's name
  std::vector<std::string> omitted_tools;         // hosted tool types left out
};

// The encrypted_content of a reasoning item whose text is `reasoning`.
std::string encrypted_reasoning(const std::string& reasoning);

// The reasoning text an encrypted_content made by k3 holds; nullopt for
// one k3 did not make (another server's, or altered).
std::optional<std::string> reasoning_of(const std::string& encrypted_content);

// A reasoning output item (id, its text as the one summary part, and
// encrypted_content when asked for).
JsonValue reasoning_item(const std::string& id, const std::string& reasoning, const ResponseExtras& extras);

}  // namespace k3::serve
