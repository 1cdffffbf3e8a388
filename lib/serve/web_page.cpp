#include "serve/web_page.h"

#include <httplib.h>
#include <openssl/evp.h>

#include "common/error.h"

namespace k3::embedded {
extern const unsigned char chat_page[];
extern const unsigned long chat_page_size;
}  // namespace k3::embedded

namespace k3::serve {

namespace {

// The text between `open` and the next `close` (the element's content, as
// CSP hashes it), or an internal error: the page is ours, so this is a build fault.
std::string_view element_text(std::string_view page, std::string_view open, std::string_view close) {
  const size_t start = page.find(open);
  const size_t end = start == std::string_view::npos ? start : page.find(close, start + open.size());
  if (end == std::string_view::npos)
    throw Error(ExitCode::kInternal, "chat page: no " + std::string(open) + " element (lib/serve/web/chat.html)");
  return page.substr(start + open.size(), end - start - open.size());
}

// "'sha256-BASE64'" of `text`, a CSP hash source.
std::string hash_source(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw Error(ExitCode::kInternal, "chat page: OpenSSL SHA-256 failed");
  unsigned char base64[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
  const int n = EVP_EncodeBlock(base64, digest, static_cast<int>(length));
  return "'sha256-" + std::string(reinterpret_cast<const char*>(base64), static_cast<size_t>(n)) + "'";
}

}  // namespace

std::string_view chat_page() { return {reinterpret_cast<const char*>(embedded::chat_page), embedded::chat_page_size}; }

std::string chat_page_policy(std::string_view page) {
  return "default-src 'none'; script-src " + hash_source(element_text(page, "<script>", "</script>")) + "; style-src " +
         hash_source(element_text(page, "<style>", "</style>")) +
         "; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
}

void add_chat_page(httplib::Server& server) {
  const std::string policy = chat_page_policy(chat_page());
  server.Get("/", [policy](const httplib::Request&, httplib::Response& res) {
    res.set_header("Content-Security-Policy", policy);
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Referrer-Policy", "no-referrer");
    res.set_header("Cache-Control", "no-cache");  // a new k3-serve's page replaces the old one at once
    const std::string_view page = chat_page();
    res.set_content(page.data(), page.size(), "text/html; charset=utf-8");
  });
}

}  // namespace k3::serve
