// A JSON schema -> JsonGrammar, for structured output. It fails closed: a
// keyword it does not enforce is refused by name, never ignored, so a
// constrained reply always validates against the schema it was given.
//
// Enforced (what OpenAI's strict mode accepts, and a little more):
//   type (one name or a list, e.g. ["string", "null"]): object, array,
//     string, number, integer, boolean, null
//   object: properties (written in the schema's order), required,
//     additionalProperties false / true / absent (only the declared
//     properties are written), or a schema when there are no properties
//     (any keys, values of that schema)
//   array: items, minItems, maxItems
//   string: minLength, maxLength (code points)
//   enum, const (any JSON values; written exactly as compact JSON)
//   anyOf, $ref to "#", "#/$defs/NAME" or "#/definitions/NAME" (recursion
//     allowed), $defs, definitions
//   annotations, read and ignored: title, description, $schema, $id,
//     $comment, default, examples, deprecated, readOnly, writeOnly
// Anything else (pattern, format, minimum, oneOf, allOf, not, ...) is an
// Error(kBadInput) "json schema: PATH: keyword \"K\" is not supported ...".
// A schema with no finite value (a required property that recurses), a $ref
// loop that reads no byte, an empty enum, more than kMaxDepth levels of
// nesting, a text over kMaxSchemaBytes or more than kMaxNodes nodes is
// refused the same way (kBadInput).
#pragma once

#include <cstddef>
#include <string_view>

#include "common/json_value.h"
#include "constrain/json_grammar.h"

namespace k3 {

struct JsonSchemaLimits {
  static constexpr size_t kMaxSchemaBytes = 1 << 20;
  static constexpr int kMaxDepth = 48;
  static constexpr size_t kMaxNodes = 50000;
};

JsonGrammar compile_json_schema(const JsonValue& schema);
// Parses the text first (kBadInput when it is not JSON or too large or deep).
JsonGrammar compile_json_schema_text(std::string_view text);
// Any JSON object (response_format json_object).
JsonGrammar json_object_grammar();

}  // namespace k3
