#include "tokenizer/kimi_pre_split.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

#include "common/error.h"

namespace k3 {

namespace {

// Alternatives in the reference order (SPEC section 3). NotHan(X) is the
// intersection [X&&[^\p{Han}]].
#define K3_NOT_HAN(cls) "(?:(?!\\p{sc=Han})[" cls "])"
#define K3_UPPERISH K3_NOT_HAN("\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}")
#define K3_LOWERISH K3_NOT_HAN("\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}")
#define K3_CONTRACTION "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
constexpr const char kPattern[] =
    "\\p{sc=Han}+"
    "|[^\\r\\n\\p{L}\\p{N}]?" K3_UPPERISH "*" K3_LOWERISH "+" K3_CONTRACTION "|[^\\r\\n\\p{L}\\p{N}]?" K3_UPPERISH
    "+" K3_LOWERISH "*" K3_CONTRACTION
    "|\\p{N}{1,3}"
    "| ?[^\\p{White_Space}\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\p{White_Space}*[\\r\\n]+"
    "|\\p{White_Space}+(?!\\P{White_Space})"
    "|\\p{White_Space}+";
#undef K3_NOT_HAN
#undef K3_UPPERISH
#undef K3_LOWERISH
#undef K3_CONTRACTION

// Per-thread match state. The JIT stack must be large: a 25,000-letter word
// is one match and each repetition of a lookahead group keeps a frame.
struct ThreadMatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
  ThreadMatchState() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(64 * 1024, 256 * 1024 * 1024, nullptr);
    if (!data || !context || !stack) throw Error(ExitCode::kResource, "out of memory for the tokenizer's regex");
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~ThreadMatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

KimiPreSplit::KimiPreSplit() {
  int err = 0;
  PCRE2_SIZE err_off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &err_off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(ExitCode::kInternal, std::string("tokenizer pattern does not compile at offset ") +
                                         std::to_string(err_off) + ": " + reinterpret_cast<char*>(msg));
  }
  code_ = code;
  // Without JIT (some platforms) the interpreter gives the same matches, slower.
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

KimiPreSplit::~KimiPreSplit() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

bool KimiPreSplit::Matcher::next(size_t from, size_t& start, size_t& len) {
  if (from >= text_.size()) return false;
  ThreadMatchState& st = thread_state();
  auto* code = static_cast<pcre2_code*>(re_.code_);
  auto subject = reinterpret_cast<PCRE2_SPTR>(text_.data());
  // The text was validated once; PCRE2 would otherwise re-check the whole
  // subject on every call (quadratic).
  int rc = re_.jit_ ? pcre2_jit_match(code, subject, text_.size(), from, PCRE2_NO_UTF_CHECK, st.data, st.context)
                    : pcre2_match(code, subject, text_.size(), from, PCRE2_NO_UTF_CHECK, st.data, st.context);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof msg);
    throw Error(ExitCode::kResource, std::string("tokenizer regex failed at byte ") + std::to_string(from) + ": " +
                                         reinterpret_cast<char*>(msg));
  }
  PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
  start = ov[0];
  len = ov[1] - ov[0];
  return len > 0;
}

std::vector<std::string_view> KimiPreSplit::split(std::string_view text) const {
  std::vector<std::string_view> out;
  split(text, [&](size_t off, size_t n) { out.push_back(text.substr(off, n)); });
  return out;
}

}  // namespace k3
