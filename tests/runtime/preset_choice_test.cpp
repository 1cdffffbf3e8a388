// `--preset auto` and k3-doctor's recommendation are one rule
// (choose_preset): the largest preset whose forecast at K3's geometry fits
// the memory available under the 90% rule. Memory figures are injected:
// recorded /proc and /sys trees (tests/data/doctor) through the reader
// k3-forward and k3-doctor share, K3_AVAILABLE_MEMORY, and each preset's own
// machine class.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/byte_format.h"
#include "doctor/model_bytes.h"
#include "doctor/preset_forecast.h"
#include "model/k3_geometry.h"
#include "planning/preset_plan.h"
#include "planning/presets.h"
#include "platform/memory_limits.h"

using namespace k3;

namespace {

const std::string kData = std::string(K3_TEST_DATA) + "/doctor/";

const PlanModel& k3_model() {
  static const PlanModel m = plan_model_for_config(k3_reference_config());
  return m;
}

// The definition: the choice fits, and no larger preset does.
void expect_largest_fitting(const PresetChoice& c, uint64_t available, const std::string& what) {
  ASSERT_NE(c.preset, nullptr) << what;
  EXPECT_TRUE(plan_fits(plan_preset(*c.preset, k3_model()), available)) << what;
  bool after = false;
  for (const Preset& p : presets()) {
    if (after) {
      EXPECT_FALSE(plan_fits(plan_preset(p, k3_model()), available)) << what << ": " << p.name << " fits too";
    }
    if (&p == c.preset) after = true;
  }
  EXPECT_EQ(c.plan.peak_rss, plan_preset(*c.preset, k3_model()).peak_rss) << what;
}

}  // namespace

TEST(PresetChoice, EachMachineClassGetsItsOwnPreset) {
  for (const Preset& p : presets()) {
    const PresetChoice c = choose_preset(k3_model(), p.machine.available_bytes());
    ASSERT_NE(c.preset, nullptr) << p.name;
    EXPECT_EQ(c.preset->name, p.name) << p.machine.label;
    expect_largest_fitting(c, p.machine.available_bytes(), p.name);
  }
}

TEST(PresetChoice, RecordedMachinesAndTheDoctorAgree) {
  const doctor::ModelBytes mb = doctor::model_bytes_from_config(k3_reference_config());
  for (const char* tree : {"v1-host", "v1-docker", "v2-container", "v2-nested", "v2-unlimited"}) {
    ::unsetenv("K3_AVAILABLE_MEMORY");
    const uint64_t available = read_memory_limits(kData + tree).available();
    const PresetChoice c = choose_preset(k3_model(), available);
    expect_largest_fitting(c, available, tree);
    const auto rec = doctor::recommend_preset(available, k3_model(), mb, std::nullopt);
    ASSERT_TRUE(rec) << tree;
    EXPECT_EQ(rec->preset.name, c.preset->name) << tree;
    EXPECT_EQ(rec->plan.peak_rss, c.plan.peak_rss) << tree;
  }
  // K3_AVAILABLE_MEMORY lowers what the machine offers; the cgroup limit
  // (8 GiB in v2-container) still caps it.
  ::setenv("K3_AVAILABLE_MEMORY", "3000000000", 1);
  const uint64_t small = read_memory_limits(kData + "v2-container").available();
  EXPECT_EQ(small, 3'000'000'000u);
  expect_largest_fitting(choose_preset(k3_model(), small), small, "3 GB");
  ::setenv("K3_AVAILABLE_MEMORY", "1000000000000", 1);
  const uint64_t capped = read_memory_limits(kData + "v2-container").available();
  EXPECT_EQ(capped, uint64_t{8} << 30);
  expect_largest_fitting(choose_preset(k3_model(), capped), capped, "1 TB under an 8 GiB cgroup");
  ::unsetenv("K3_AVAILABLE_MEMORY");
}

TEST(PresetChoice, ReasonNamesTheLimitAndTheNextPreset) {
  const Preset& desktop = *find_preset("desktop");
  const uint64_t available = desktop.machine.available_bytes();
  const PresetChoice c = choose_preset(k3_model(), available);
  ASSERT_EQ(c.preset, &desktop);
  ASSERT_NE(c.larger, nullptr);
  EXPECT_EQ(c.larger->name, "workstation");
  const std::string r = c.reason();
  EXPECT_NE(r.find("desktop: forecast " + format_bytes(c.plan.peak_rss) + ", within the " +
                   format_bytes(plan_limit(available)) + " limit (90% of " + format_bytes(available) + " available)"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("workstation would need " + format_bytes(plan_preset(*c.larger, k3_model()).peak_rss)),
            std::string::npos)
      << r;
}

TEST(PresetChoice, NothingFitsOrMemoryUnknown) {
  const uint64_t floor = plan_preset(presets().front(), k3_model()).peak_rss;
  const PresetChoice none = choose_preset(k3_model(), floor);  // the floor itself is over 90% of it
  EXPECT_EQ(none.preset, nullptr);
  EXPECT_EQ(none.plan.peak_rss, floor);
  EXPECT_NE(none.reason().find("no preset fits: the smallest (min) needs " + format_bytes(floor)), std::string::npos)
      << none.reason();
  const PresetChoice unknown = choose_preset(k3_model(), UINT64_MAX);
  ASSERT_NE(unknown.preset, nullptr);
  EXPECT_EQ(unknown.preset->name, "laptop");
  EXPECT_NE(unknown.reason().find("unknown"), std::string::npos) << unknown.reason();
  // A longer context or more sequences cost more: the choice never grows.
  const uint64_t available = find_preset("server")->machine.available_bytes();
  RunRequest longer;
  longer.context = 4'000'000;  // 221 GB of MLA latent cache
  const PresetChoice c = choose_preset(k3_model(), available, longer);
  EXPECT_EQ(c.preset, nullptr) << c.reason();
}
