// k3-doctor: can this machine run Kimi-K3, with which preset, and how fast?
// A thin front end over lib/doctor/.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/cli_parse.h"
#include "cli/flag_checks.h"
#include "cli/path_flag.h"
#include "common/error.h"
#include "common/tool_main.h"
#include "doctor/doctor.h"
#include "platform/system_root.h"

int main(int argc, char** argv) {
  k3::doctor::DoctorOptions opt;
  bool json = false;
  bool no_probe = false;
  double probe_mb = double(opt.probe_max_bytes) / 1e6;
  double hit_rate = -1;

  CLI::App app{
      "k3-doctor: checks the CPU, memory, storage and checkpoint before a k3-forward run, recommends a\n"
      "memory preset and forecasts seconds per token from a short O_DIRECT read-bandwidth measurement.\n"
      "Each check prints OK / WARN / FAIL with one line of advice. Vulkan devices get a short FP32 rate\n"
      "probe, and --gpu INDEX is recommended where one beats this CPU's prefill rate."};
  app.add_option("--model", opt.model_dir,
                 "checkpoint directory (model.safetensors.index.json + shards; default: none: the machine is "
                 "checked without one)");
  app.add_option("--trunk", opt.trunk_dir,
                 "trunk directory written by k3-pack (trunk.bin + trunk.json; default: none: no trunk checked)");
  app.add_flag("--json", json, "print one JSON object instead of the report (same checks, stable key order)");
  app.add_option("--probe-seconds", opt.probe_seconds, "time budget of the bandwidth measurement, in seconds")
      ->check(k3::cli::in_range(0.05, 120.0))
      ->capture_default_str();
  app.add_option("--probe-max-mb", probe_mb, "most MB the bandwidth measurement may read")
      ->check(k3::cli::in_range(1.0, 1e7))
      ->capture_default_str();
  app.add_option("--probe-file", opt.probe_file,
                 "measure this file instead of the largest file in the model and trunk directories (default: none)");
  app.add_flag("--no-probe", no_probe,
               "skip the bandwidth and CPU measurements (the forecasts then assume 2 GB/s and 50 GFLOP/s a core)");
  app.add_option("--hit-rate", hit_rate,
                 "expert cache hit rate (0..1) for the forecast; default: the cache's share of all experts")
      ->check(k3::cli::in_range(0.0, 1.0));
  app.add_option("--prompt-tokens", opt.prompt_tokens,
                 "prompt length for the time-to-first-token forecast (an agent's system prompt and tools), on "
                 "the CPU and on a recommended --gpu device")
      ->check(k3::cli::in_range(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--draft", opt.draft_dir,
                 "a Kimi-K3-DSpark draft directory: recommend the preset that fits with the draft counted, as "
                 "k3-forward --draft --preset auto chooses (exit 3 when it does not fit the model; default: none)")
      ->check(k3::cli::non_empty_path());
  app.add_option("--root", opt.root,
                 std::string("read /proc and /sys under this directory (a recorded tree) instead of the live "
                             "system; also $") +
                     k3::kRootEnv + " (default: none: the live system)");
  app.footer(std::string("The exit status says whether a run can proceed:\n"
                         "  0    ready\n"
                         "  10   ready, with warnings (read them)\n"
                         "  11   cannot run (a FAIL above)\n") +
             "Errors outside the checks use the shared codes:\n" + k3::exit_codes_help());

  if (auto status = k3::parse_command_line(app, argc, argv, "k3-doctor")) return *status;
  opt.probe = !no_probe;
  opt.probe_max_bytes = static_cast<uint64_t>(probe_mb * 1e6);
  if (hit_rate >= 0) opt.hit_rate = hit_rate;

  return k3::run_tool("k3-doctor", [&] {
    k3::doctor::Report report = k3::doctor::run_doctor(opt);
    const std::string text = json ? k3::doctor::format_json(report) : k3::doctor::format_human(report);
    // A report that cannot be written (a full disk, a closed pipe) is an I/O
    // error, not "ready, with warnings".
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
      throw k3::Error(k3::ExitCode::kIo, std::string("cannot write the report to stdout: ") + std::strerror(errno));
    return report.exit_code();
  });
}
