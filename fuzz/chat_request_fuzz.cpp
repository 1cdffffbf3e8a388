// A chat request (k3-tokenize --chat, k3-chat): parsed, rendered to XTML
// and encoded with the tiny fixture's tokenizer; the parsed messages are
// written back as JSON (what a history file stores) and read again.
#include "chat/chat_request.h"
#include "chat/python_json.h"
#include "chat/xtml_renderer.h"
#include "fuzz_input.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const k3::Tokenizer tok = k3::Tokenizer::load(K3_FUZZ_TINY);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  k3::fuzz::expect_clean([&] {
    const k3::ChatRequest request = k3::parse_chat_request(text);
    const k3::ChatPrompt prompt = k3::encode_chat(tok, k3::render_chat(request));
    if (prompt.prefix_ids > prompt.ids.size()) std::abort();
    for (const k3::ChatMessage& m : request.messages) (void)k3::python_json_dumps(k3::chat_message_json(m));
  });
  return 0;
}
