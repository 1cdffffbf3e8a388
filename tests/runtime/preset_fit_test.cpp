// Every preset fits the machine it is named for: its forecast peak RSS at
// K3's true geometry (the plan --list-presets makes: 4096 positions, the
// preset's largest batch, a packed trunk) stays under 90% of what a typical
// machine of its class has available with the OS and a desktop session
// running, and uses that class's memory (it would not fit the class below).
// Larger presets hold more and read fewer trunk bytes per token.
#include <gtest/gtest.h>

#include <cstdio>

#include "model/k3_geometry.h"
#include "planning/memory_plan.h"
#include "planning/preset_plan.h"
#include "planning/presets.h"

using namespace k3;

namespace {

uint64_t streamed_trunk_bytes(const MemoryPlan& p, const TrunkLayout& layout) {
  uint64_t n = 0;
  for (int s : p.streamed) n += layout.sections[s].length;
  return n;
}

}  // namespace

TEST(PresetFit, EveryPresetFitsItsMachineClassAtK3Geometry) {
  const PlanModel model = plan_model_for_config(k3_reference_config());
  std::printf("%-12s %8s %8s %10s %10s %10s %16s\n", "preset", "trunk GB", "cache GB", "forecast", "limit", "class",
              "streamed/token");
  const Preset* previous = nullptr;
  MemoryPlan previous_plan;
  for (const Preset& p : presets()) {
    const MemoryPlan plan = plan_preset(p, model);
    const uint64_t available = p.machine.available_bytes();
    std::printf("%-12s %8.1f %8.1f %7.2f GB %7.2f GB %10s %13.2f GB\n", p.name.c_str(), p.trunk_gb, p.cache_gb,
                plan.peak_rss / 1e9, plan_limit(available) / 1e9, p.machine.label,
                streamed_trunk_bytes(plan, model.layout) / 1e9);
    // The class: available memory below MemTotal, MemTotal below the label.
    EXPECT_GT(available, 0u) << p.name;
    EXPECT_LT(p.machine.available_gb, p.machine.mem_total_gb) << p.name;
    EXPECT_LT(p.machine.mem_total_gb, std::stod(p.machine.label)) << p.name;
    EXPECT_TRUE(plan_fits(plan, available)) << p.name << " forecasts " << plan.peak_rss << " bytes, over 90% of the "
                                            << available << " bytes a " << p.machine.label << " machine has available";
    if (previous) {
      // Uses what its class has beyond the class below: it would not fit there.
      EXPECT_FALSE(plan_fits(plan, previous->machine.available_bytes()))
          << p.name << " also fits a " << previous->machine.label << " machine";
      EXPECT_GT(plan.peak_rss, previous_plan.peak_rss) << p.name;
      EXPECT_GT(p.machine.available_gb, previous->machine.available_gb) << p.name;
      // More memory buys speed: fewer trunk bytes per token, or more cache.
      const uint64_t streamed = streamed_trunk_bytes(plan, model.layout);
      const uint64_t before = streamed_trunk_bytes(previous_plan, model.layout);
      EXPECT_TRUE(streamed < before || (streamed == before && plan.cache_slots > previous_plan.cache_slots)) << p.name;
    }
    previous = &p;
    previous_plan = plan;
  }
}

// A preset is a name for budgets: find_preset finds every listed one and
// nothing else ("auto" is chosen among them, not a preset of its own).
TEST(PresetFit, NamesAreFoundAndAutoIsNotAPreset) {
  for (const Preset& p : presets()) EXPECT_EQ(find_preset(p.name), &p);
  EXPECT_EQ(find_preset(kAutoPreset), nullptr);
  EXPECT_EQ(find_preset("desk"), nullptr);
}
