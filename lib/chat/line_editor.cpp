#include "chat/line_editor.h"

#include <histedit.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cwchar>

#include "common/error.h"
#include "common/file.h"

namespace k3 {

namespace {
constexpr int kHistorySize = 1000;
}

LineEditor::LineEditor(std::string history_file, std::function<bool()> interrupted)
    : history_file_(std::move(history_file)), interrupted_(std::move(interrupted)) {
  // libedit decodes the keyboard's bytes with the locale's character set.
  std::setlocale(LC_CTYPE, "");
  el_ = el_init("k3-chat", stdin, stdout, stderr);
  history_ = history_init();
  HistEvent ev;
  history(history_, &ev, H_SETSIZE, kHistorySize);
  history(history_, &ev, H_SETUNIQUE, 1);
  if (!history_file_.empty()) history(history_, &ev, H_LOAD, history_file_.c_str());
  el_set(el_, EL_CLIENTDATA, this);
  el_set(el_, EL_EDITOR, "emacs");
  el_set(el_, EL_HIST, history, history_);
  el_set(el_, EL_PROMPT, &LineEditor::prompt_of);
  el_set(el_, EL_GETCFN, &LineEditor::read_char);
}

LineEditor::~LineEditor() {
  if (el_) el_end(el_);
  if (history_) history_end(history_);
}

const char* LineEditor::prompt_of(EditLine* el) {
  void* self = nullptr;
  el_get(el, EL_CLIENTDATA, &self);
  return static_cast<LineEditor*>(self)->prompt_.c_str();
}

// Reads one character for libedit: UTF-8 bytes from the terminal decoded to
// a wide character. A signal (Ctrl-C) ends the line when `interrupted` says
// so, where libedit itself would go on waiting for a key.
int LineEditor::read_char(EditLine* el, wchar_t* out) {
  void* self_ptr = nullptr;
  el_get(el, EL_CLIENTDATA, &self_ptr);
  auto* self = static_cast<LineEditor*>(self_ptr);
  std::mbstate_t state{};
  while (true) {
    char c;
    const ssize_t r = ::read(0, &c, 1);
    if (r == 0) return 0;
    if (r < 0) {
      if (errno == EINTR && !(self->interrupted_ && self->interrupted_())) continue;
      return -1;
    }
    const size_t n = std::mbrtowc(out, &c, 1, &state);
    if (n == static_cast<size_t>(-2)) continue;  // inside a multi-byte character
    if (n == static_cast<size_t>(-1)) {         // not valid in this locale: the byte as it is
      *out = static_cast<unsigned char>(c);
      state = std::mbstate_t{};
    }
    return 1;
  }
}

bool LineEditor::read(const std::string& prompt, std::string& line) {
  prompt_ = prompt;
  int count = 0;
  const char* got = el_gets(el_, &count);
  if (got == nullptr || count <= 0) {
    std::fputs("\n", stdout);  // the prompt's line ends; what follows starts on its own
    std::fflush(stdout);
    return false;
  }
  line.assign(got, static_cast<size_t>(count));
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return true;
}

void LineEditor::remember(const std::string& input) {
  if (input.empty()) return;
  HistEvent ev;
  history(history_, &ev, H_ENTER, input.c_str());
  if (history_file_.empty()) return;
  // Saved whole through a temporary (never written through a planted link),
  // readable by its owner only: it holds what the user typed.
  char* text = nullptr;
  size_t size = 0;
  std::FILE* mem = open_memstream(&text, &size);
  if (mem == nullptr) return;
  history(history_, &ev, H_SAVE_FP, mem);
  std::fclose(mem);
  try {
    write_file_atomic(history_file_, text, size);
    ::chmod(history_file_.c_str(), 0600);
  } catch (const Error& e) {
    if (!warned_) std::fprintf(stderr, "k3-chat: warning: input history not saved: %s\n", e.what());
    warned_ = true;
  }
  std::free(text);
}

}  // namespace k3
