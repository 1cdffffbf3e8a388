// GET /v1/models: the one model served, in OpenAI's shape ({"object":
// "list", "data": [{"id", "object": "model", "created", "owned_by",
// "max_model_len"}]}) or, for a request that carries an anthropic-version
// header (Anthropic's SDKs send it on every call), in Anthropic's ({"data":
// [{"type": "model", "id", "display_name", "created_at"}], "has_more":
// false, "first_id", "last_id"}).
#pragma once

#include <cstdint>
#include <string>

namespace k3::serve {

enum class ModelsShape { kOpenAi, kAnthropic };

std::string models_list_json(const std::string& model_name, int64_t context, ModelsShape shape);

}  // namespace k3::serve
