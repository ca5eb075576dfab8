// A straggler named with the part of the step it loses its time in, end to
// end with thread-ranks: rank 1's data set made slow (each sample sleeps),
// then rank 1's forward made slow (it spins, as under a CPU hog on its
// cores). The run's advice (metrics.jsonl, and the end-of-run report) names
// rank 1 with data wait, then with compute.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "paisoar/data/dataset.h"
#include "tests/train/train_support.h"

using namespace paisoar;

namespace {

// `inner`, each sample `delay` late.
class SlowDataset : public data::Dataset {
 public:
  SlowDataset(std::shared_ptr<const data::Dataset> inner, std::chrono::microseconds delay)
      : inner_(std::move(inner)), delay_(delay) {}
  int64_t size() const override { return inner_->size(); }
  data::Example get(int64_t index, data::SampleRng& rng) const override {
    std::this_thread::sleep_for(delay_);
    return inner_->get(index, rng);
  }
  int64_t num_classes() const override { return inner_->num_classes(); }
  std::string describe(int64_t index) const override { return inner_->describe(index); }

 private:
  std::shared_ptr<const data::Dataset> inner_;
  std::chrono::microseconds delay_;
};

// The straggler advice of a 2-rank run whose rank 1 `slow` makes slow; the
// run must also report its data-parallel efficiency as low, for that cause.
nlohmann::json straggler_advice(const std::string& name, const std::function<void(train::TrainTask&)>& slow) {
  auto c = paisoar::testing::small_config();
  c.run_dir += "_straggler_" + name;
  std::filesystem::remove_all(c.run_dir);
  c.model.name = "mlp";
  c.data.workers = 1;
  c.train.log_every = 5;
  c.eval.every_epochs = 0;
  ::testing::internal::CaptureStdout();
  paisoar::testing::train_with(c, 2, nullptr, paisoar::testing::DataSource::Synthetic,
                               [&](int rank, train::TrainTask& task) {
                                 if (rank == 1) slow(task);
                               });
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("data-parallel efficiency 0."), std::string::npos) << out;
  EXPECT_NE(out.find("[low data-parallel efficiency] the median rank is busy"), std::string::npos) << out;
  EXPECT_NE(out.find("cause: imbalance, the other ranks wait for the straggler named above (slow in "),
            std::string::npos)
      << out;
  std::ifstream in(c.run_dir + "/metrics.jsonl");
  nlohmann::json found;
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record.value("event", "") != "advice") continue;
    for (const auto& a : record.at("advice")) {
      if (a.value("verdict", "") == "straggler") found = a;
    }
  }
  std::filesystem::remove_all(c.run_dir);
  return found;
}

TEST(TrainerStraggler, ARankWithSlowDataIsNamedWithDataWait) {
  const auto advice = straggler_advice("data", [](train::TrainTask& task) {
    task.train_data = std::make_shared<SlowDataset>(task.train_data, std::chrono::microseconds(3000));
  });
  ASSERT_TRUE(advice.is_object()) << "no straggler advice";
  const std::string evidence = advice.value("evidence", "");
  EXPECT_EQ(evidence.rfind("rank 1 is busy ", 0), 0u) << evidence;
  EXPECT_NE(evidence.find("the excess is in data wait"), std::string::npos) << evidence;
  EXPECT_NE(advice.value("action", "").find("data.workers"), std::string::npos) << advice.dump();
}

TEST(TrainerStraggler, ARankThatComputesSlowerIsNamedWithCompute) {
  const auto advice = straggler_advice("compute", [](train::TrainTask& task) {
    task.forward = [forward = task.forward](const torch::Tensor& x) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(40);
      while (std::chrono::steady_clock::now() < until) {
      }  // the CPU time another process would take from it
      return forward(x);
    };
  });
  ASSERT_TRUE(advice.is_object()) << "no straggler advice";
  const std::string evidence = advice.value("evidence", "");
  EXPECT_EQ(evidence.rfind("rank 1 is busy ", 0), 0u) << evidence;
  EXPECT_NE(evidence.find("the excess is in compute (forward and backward)"), std::string::npos) << evidence;
  EXPECT_NE(advice.value("action", "").find("CPU hog"), std::string::npos) << advice.dump();
}

}  // namespace
