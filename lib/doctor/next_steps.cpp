#include "doctor/next_steps.h"

#include "trunk/location.h"

namespace k3::doctor {

namespace {
// Paths are printed as given; one with a space or a quote is single-quoted.
std::string shell_word(const std::string& s) {
  if (s.find_first_of(" \t'\"$`\\") == std::string::npos) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

std::vector<std::string> next_steps(const NextStepFacts& f) {
  std::vector<std::string> steps;
  if (!f.preset) return steps;
  const std::string model = shell_word(f.model_dir.empty() ? "~/k3model" : f.model_dir);
  const std::string trunk = shell_word(!f.trunk_dir.empty()  ? f.trunk_dir
                                       : f.model_dir.empty() ? "~/k3trunk"
                                                             : suggested_trunk_dir(f.model_dir));
  if (f.model_dir.empty()) steps.push_back("k3-fetch-verify download " + model);
  if (!f.trunk_ready) steps.push_back("k3-pack " + model + " " + trunk);
  const std::string draft = f.draft_dir.empty() ? "" : " --draft " + shell_word(f.draft_dir);
  steps.push_back("k3-tokenize --tok " + model + " --model " + model + " --prompt-file prompt.txt | k3-forward " +
                  model + " --trunk " + trunk + " --preset " + *f.preset + " --gen 64" + draft + " | k3-detok --tok " +
                  model);
  steps.push_back("k3-chat " + model + " --trunk " + trunk + " --preset " + *f.preset + draft);
  return steps;
}

}  // namespace k3::doctor
