// k3-serve's request bodies: parsed as a chat request and as a completion
// request, refused only with ApiError (the server's OpenAI-shaped 4xx), and
// a parsed chat rendered to prompt ids with the tiny fixture's tokenizer;
// the error body written for a refusal must be JSON that reads back.
#include "chat/xtml_renderer.h"
#include "fuzz_input.h"
#include "serve/api_error.h"
#include "serve/openai_request.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const k3::Tokenizer tok = k3::Tokenizer::load(K3_FUZZ_TINY);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const k3::serve::RequestLimits limits{64, 4096, "k3-tiny"};
  for (auto endpoint : {k3::serve::Endpoint::kChat, k3::serve::Endpoint::kCompletion}) {
    k3::fuzz::expect_clean([&] {
      try {
        const k3::serve::ParsedRequest r = k3::serve::parse_openai_request(text, endpoint, limits);
        if (r.chat) {
          const k3::ChatPrompt prompt = k3::encode_chat(tok, k3::render_chat(*r.chat));
          if (prompt.prefix_ids > prompt.ids.size()) std::abort();
        }
        if (r.max_tokens && (*r.max_tokens < 1 || *r.max_tokens > limits.context)) std::abort();
      } catch (const k3::serve::ApiError& e) {
        if (e.status() != 400 && e.status() != 404) std::abort();
        k3::JsonValue v;
        std::string error;
        if (!k3::parse_json(k3::serve::error_body(e), v, error)) std::abort();
      }
    });
  }
  return 0;
}
