#include "chat/line_editor.h"

#include <histedit.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>

namespace k3 {

namespace {
constexpr int kHistorySize = 1000;
}  // namespace

std::string default_input_history_path() {
  if (const char* v = std::getenv("K3_CHAT_INPUTS")) return v;
  std::string dir;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) {
    dir = std::string(x) + "/k3";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    dir = std::string(h) + "/.local/state";
    ::mkdir((std::string(h) + "/.local").c_str(), 0700);
    ::mkdir(dir.c_str(), 0700);
    dir += "/k3";
  } else {
    return "";
  }
  ::mkdir(dir.c_str(), 0700);  // an existing one is kept as it is
  return dir + "/chat-inputs";
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
    if (n == static_cast<size_t>(-1)) {          // not valid in this locale: the byte as it is
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
  // Saved whole through a temporary created exclusively beside the file
  // (mkstemp: never written through a planted link), readable by its owner
  // only (libedit sets 0600: it holds what the user typed), then renamed
  // over it. libedit needs a real file: it changes the file's mode first.
  std::string temp = history_file_ + ".XXXXXX";
  const int fd = ::mkstemp(temp.data());
  std::FILE* f = fd >= 0 ? ::fdopen(fd, "w") : nullptr;
  bool ok = f != nullptr && history(history_, &ev, H_SAVE_FP, f) >= 0;
  if (f) ok = std::fclose(f) == 0 && ok;
  else if (fd >= 0) ::close(fd);
  if (ok) ok = std::rename(temp.c_str(), history_file_.c_str()) == 0;
  if (!ok) {
    if (fd >= 0) ::unlink(temp.c_str());
    if (!warned_)
      std::fprintf(stderr, "k3-chat: warning: input history not saved to %s: %s\n", history_file_.c_str(),
                   std::strerror(errno));
    warned_ = true;
  }
}

}  // namespace k3
