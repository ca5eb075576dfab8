// Exact resume: k steps, checkpoint to a file, fresh model and optimizer (and
// a disturbed RNG), restore, m more steps == k + m uninterrupted steps, bit for
// bit, for SGD+momentum, Adam (amsgrad), AdamW, LARS and LAMB, with dropout
// drawing from the restored CPU generator and an LR changed before the save.
// A checkpoint of another model fails with a list of what differs.
#include "paisoar/format/safetensors.h"
#include "paisoar/checkpoint/training_state.h"
#include "paisoar/optim/lamb.h"
#include "paisoar/optim/lars.h"

#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <memory>

namespace paisoar::checkpoint {
namespace {

using testing::expect_error;
using testing::TempDir;

torch::nn::Sequential make_model(int64_t hidden = 16, bool second_bias = true) {
  return torch::nn::Sequential(torch::nn::Linear(4, hidden), torch::nn::ReLU(), torch::nn::Dropout(0.3),
                               torch::nn::Linear(torch::nn::LinearOptions(hidden, 3).bias(second_bias)));
}

using OptimizerFactory = std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)>;

struct Case {
  const char* name;
  OptimizerFactory make;
  std::vector<const char*> fields;  // state tensors expected for parameter 0
};

std::vector<Case> cases() {
  return {
      {"SGD", [](auto p) { return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.05).momentum(0.9)); },
       {"momentum_buffer"}},
      {"Adam",
       [](auto p) { return std::make_unique<torch::optim::Adam>(p, torch::optim::AdamOptions(1e-2).amsgrad(true)); },
       {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"}},
      {"AdamW", [](auto p) { return std::make_unique<torch::optim::AdamW>(p, torch::optim::AdamWOptions(1e-2)); },
       {"exp_avg", "exp_avg_sq", "step"}},
      {"LARS", [](auto p) { return std::make_unique<optim::LARS>(p, optim::LARSOptions(0.5)); }, {"momentum_buffer"}},
      {"LAMB", [](auto p) { return std::make_unique<optim::LAMB>(p, optim::LAMBOptions(1e-2)); },
       {"exp_avg", "exp_avg_sq", "step"}},
  };
}

struct Data {
  torch::Tensor x = torch::randn({32, 4}, torch::TensorOptions().dtype(torch::kFloat32));
  torch::Tensor y = torch::randn({32, 3});
};

void train(torch::nn::Sequential& model, torch::optim::Optimizer& optimizer, const Data& data, int steps) {
  for (int i = 0; i < steps; ++i) {
    optimizer.zero_grad();
    torch::mse_loss(model->forward(data.x), data.y).backward();
    optimizer.step();
  }
}

void set_lr(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

TEST(TrainingState, ResumeIsBitIdenticalForEveryOptimizer) {
  constexpr int k = 5, m = 4;
  const Data data;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    TempDir dir("training_state");
    // Uninterrupted k + m steps; the LR is halved after k (a schedule's work).
    torch::manual_seed(7);
    auto reference = make_model();
    auto reference_opt = c.make(reference->parameters());
    train(reference, *reference_opt, data, k);
    set_lr(*reference_opt, reference_opt->param_groups()[0].options().get_lr() / 2);
    train(reference, *reference_opt, data, m);

    // k steps, halve, save.
    torch::manual_seed(7);
    auto first = make_model();
    auto first_opt = c.make(first->parameters());
    train(first, *first_opt, data, k);
    set_lr(*first_opt, first_opt->param_groups()[0].options().get_lr() / 2);
    const format::TensorFile captured = capture_training_state({first.ptr().get(), first_opt.get()}, {{"step", "5"}});
    format::save_safetensors(dir / "ckpt.safetensors", captured.tensors, captured.metadata);

    // A fresh model (other weights), a fresh optimizer, another RNG state.
    torch::manual_seed(1234);
    auto resumed = make_model();
    auto resumed_opt = c.make(resumed->parameters());
    const format::TensorFile loaded = format::load_safetensors(dir / "ckpt.safetensors");
    for (const char* field : c.fields) EXPECT_EQ(loaded.tensors.count(std::string("optim.0.") + field), 1u) << field;
    EXPECT_EQ(loaded.metadata.at("step"), "5");
    restore_training_state({resumed.ptr().get(), resumed_opt.get()}, loaded);
    train(resumed, *resumed_opt, data, m);

    const auto want = reference->named_parameters();
    for (const auto& item : resumed->named_parameters()) {
      EXPECT_TRUE(torch::equal(item.value(), want[item.key()])) << item.key();
    }
    EXPECT_EQ(resumed_opt->param_groups()[0].options().get_lr(), reference_opt->param_groups()[0].options().get_lr());
  }
}

TEST(TrainingState, RngStateRestoresTheSameDraws) {
  format::TensorMap tensors;
  add_rng_state(tensors);
  const torch::Tensor first = torch::rand({8});
  restore_rng_state({tensors, {}, "memory"});
  EXPECT_TRUE(torch::equal(torch::rand({8}), first));
  expect_error([] { restore_rng_state({{}, {}, "x.safetensors"}); }, {"x.safetensors", "rng.cpu"});
}

TEST(TrainingState, AnotherModelIsListedAndNothingChanges) {
  auto saved = make_model(16, true);
  format::TensorFile checkpoint;
  add_module_state(*saved, checkpoint.tensors);
  checkpoint.source = "run/step-000000000010.safetensors";
  checkpoint.tensors["model.9.weight"] = torch::ones({1});

  auto other = make_model(8, false);
  const torch::Tensor before = other[0]->as<torch::nn::Linear>()->weight.clone();
  expect_error([&] { restore_module_state(*other, checkpoint); },
               {"run/step-000000000010.safetensors", "does not match the model",
                "shape of model.0.weight is [16,4] in the file, [8,4] in the model", "unexpected model.3.bias",
                "unexpected model.9.weight"});
  EXPECT_TRUE(torch::equal(other[0]->as<torch::nn::Linear>()->weight, before));

  auto missing = make_model(16, true);
  checkpoint.tensors.erase("model.3.bias");
  checkpoint.tensors.erase("model.9.weight");
  checkpoint.tensors["model.0.bias"] = checkpoint.tensors["model.0.bias"].to(torch::kFloat64);
  expect_error([&] { restore_module_state(*missing, checkpoint); },
               {"missing model.3.bias", "dtype of model.0.bias is Double in the file, Float in the model"});
}

TEST(TrainingState, AnotherOptimizerOrLayoutIsAnError) {
  auto model = make_model();
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  format::TensorFile checkpoint = capture_training_state({model.ptr().get(), &sgd});
  checkpoint.source = "a.safetensors";
  torch::optim::Adam adam(model->parameters());
  expect_error([&] { optim::restore_optimizer_state(adam, checkpoint); }, {"a.safetensors", "torch::optim::SGD", "torch::optim::Adam"});

  auto smaller = make_model(8);
  torch::optim::SGD other(smaller->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  train(model, sgd, Data(), 1);
  checkpoint = capture_training_state({model.ptr().get(), &sgd});
  checkpoint.source = "a.safetensors";
  expect_error([&] { optim::restore_optimizer_state(other, checkpoint); }, {"a.safetensors", "optim.0.momentum_buffer"});
  EXPECT_TRUE(other.state().empty());

  expect_error([&] { capture_training_state({}, {{"optim.x", "1"}}); }, {"optim.x", "reserved"});
}

// A parameter without state is legitimate (it never had a gradient); a state
// tensor dropped from a file whose list names it is damage, and so is
// metadata that is not what the writer gives it.
TEST(TrainingState, ADroppedStateTensorOrDamagedOptimizerMetadataIsRefused) {
  auto model = make_model();
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  train(model, sgd, Data(), 1);
  const format::TensorFile intact = capture_training_state({model.ptr().get(), &sgd});
  auto fresh = [&] {
    return std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  };

  format::TensorFile dropped = intact;
  dropped.source = "a.safetensors";
  ASSERT_EQ(dropped.tensors.erase("optim.0.momentum_buffer"), 1u);
  auto sgd2 = fresh();
  expect_error([&] { optim::restore_optimizer_state(*sgd2, dropped); },
               {"a.safetensors", "parameter 0 holds 'none' but the file lists 'momentum_buffer'", "damaged"});
  EXPECT_TRUE(sgd2->state().empty());

  const std::pair<const char*, const char*> damaged_metadata[] = {
      {"optim.groups", "[{"}, {"optim.groups", "[1]"}, {"optim.groups", "{}"},
      {"optim.scalar_fields", "[]"}, {"optim.scalar_fields", "{\"step\": 3}"}, {"optim.fields", "[[1]]"}};
  for (const auto& [key, value] : damaged_metadata) {
    format::TensorFile c = intact;
    c.source = "b.safetensors";
    c.metadata[key] = value;
    auto sgd3 = fresh();
    try {
      optim::restore_optimizer_state(*sgd3, c);
      ADD_FAILURE() << key << "=" << value << " accepted";
    } catch (const c10::Error& e) {
      const std::string message = e.what_without_backtrace();
      EXPECT_NE(message.find("b.safetensors"), std::string::npos) << message;
      EXPECT_NE(message.find(key), std::string::npos) << message;
      EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
    }
    EXPECT_TRUE(sgd3->state().empty()) << key << "=" << value;
  }
  // A file written before optim.fields existed is read as before.
  format::TensorFile older = intact;
  older.metadata.erase("optim.fields");
  auto sgd4 = fresh();
  optim::restore_optimizer_state(*sgd4, older);
  EXPECT_FALSE(sgd4->state().empty());
}

}  // namespace
}  // namespace paisoar::checkpoint
