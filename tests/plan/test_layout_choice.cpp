// LayoutChoice: its --set overrides give the config apply() gives, and the
// enumeration offers only layouts `paisoar train` takes, dropping the others
// in its words.
#include <gtest/gtest.h>

#include <algorithm>

#include "paisoar/plan/layout_choice.h"
#include "paisoar/train/config_schema.h"
#include "paisoar/train/zoo.h"

namespace paisoar {
namespace {

TEST(LayoutChoice, OverridesGiveTheConfigApplyGives) {
  train::TrainConfig base;
  base.model.name = "gpt";
  base.parallel.automatic = true;
  for (const plan::LayoutChoice& l :
       {plan::LayoutChoice{{2, 1, 1}, 2, 2, true}, plan::LayoutChoice{{1, 2, 1}, 0, 4, false},
        plan::LayoutChoice{{1, 1, 2}, 0, 1, true}}) {
    train::TrainConfig via_sets = base;
    train::ConfigSchema schema = train::schema_for(via_sets);
    for (const auto& o : l.overrides()) schema.set(o);
    via_sets.parallel.automatic = false;
    EXPECT_EQ(train::dump_config(via_sets), train::dump_config(l.apply(base))) << l.to_string();
  }
}

TEST(LayoutChoice, ParallelAutoIsTheSectionsAutoKey) {
  train::TrainConfig c;
  train::ConfigSchema schema = train::schema_for(c);
  schema.load_yaml("parallel: auto\n", "test.yaml");
  EXPECT_TRUE(c.parallel.automatic);
  train::TrainConfig d;
  train::schema_for(d).set("parallel=auto");
  EXPECT_TRUE(d.parallel.automatic);
  train::TrainConfig e;
  EXPECT_THROW(train::schema_for(e).load_yaml("parallel: fast\n", "test.yaml"), train::ConfigError);
}

TEST(EnumerateLayouts, EveryOfferedLayoutValidatesAndEachDroppedOneSaysWhy) {
  train::TrainConfig c;
  c.model.name = "fashion_cnn";
  c.train.batch_size = 128;
  const plan::Candidates all = plan::enumerate_layouts(c, 4);
  ASSERT_FALSE(all.layouts.empty());
  for (const auto& l : all.layouts) {
    const train::TrainConfig applied = l.apply(c);
    EXPECT_NO_THROW(train::validate(applied, 4)) << l.to_string();
    EXPECT_NO_THROW(train::check_reference_layout(applied)) << l.to_string();
    EXPECT_EQ(l.ranks.size(), 4);
    if (l.ranks.data == 1) EXPECT_EQ(l.zero_stage, 0) << "ZeRO over one rank shards nothing";
  }
  // data 4 x ZeRO 0-3 x 1-2 micro-batches x checkpointing off/on
  EXPECT_EQ(std::count_if(all.layouts.begin(), all.layouts.end(), [](const auto& l) { return l.ranks.data == 4; }),
            16);
  // fashion_cnn splits fc1's 128 units: tensor 4 divides them; 4 stages fit its 4 layers.
  EXPECT_TRUE(std::any_of(all.layouts.begin(), all.layouts.end(), [](const auto& l) { return l.ranks.tensor == 4; }));
  EXPECT_TRUE(std::any_of(all.layouts.begin(), all.layouts.end(), [](const auto& l) { return l.ranks.pipeline == 4; }));

  const plan::Candidates five = plan::enumerate_layouts(c, 5);
  EXPECT_TRUE(five.layouts.empty());
  bool names_layers = false;
  for (const auto& d : five.dropped) names_layers |= d.why.find("has 4 layers") != std::string::npos;
  EXPECT_TRUE(names_layers) << "5 stages of a 4-layer model are dropped naming its limit";
}

}  // namespace
}  // namespace paisoar
