// GET /: k3-serve's chat page (lib/serve/web/chat.html, compiled into the
// library by cmake/K3EmbedFile.cmake: one file with its style and script
// inline, nothing fetched from elsewhere), answered without an API key: the
// page asks for the key itself when the API refuses it (docs/serve.md).
#pragma once

#include <string>
#include <string_view>

namespace httplib {
class Server;
}

namespace k3::serve {

// The page's bytes, as in the source tree.
std::string_view chat_page();

// The Content-Security-Policy the page is served with: only its own inline
// <script> and <style> (by their SHA-256, so no other script, including one
// a model's reply might smuggle in as markup, can run), requests only to this
// server, images only as data: URLs, no frames, forms or <base>.
std::string chat_page_policy(std::string_view page);

// Registers GET / on `server`.
void add_chat_page(httplib::Server& server);

}  // namespace k3::serve
