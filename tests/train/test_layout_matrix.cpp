// The layout matrix: fashion_cnn, resnet18 (small images) and gpt, each
// through every data {1, 2, 4} x pipeline {1, 2} x tensor {1, 2 where the
// model splits} layout of at most 4 thread-ranks, with ZeRO {0, 1, 2, 3} x
// activation checkpointing {off, on}, train 4 steps to the loss and
// parameters of one rank (within rtol 1e-4). The one-rank reference reads the
// same micro-batches: its data set is reordered so that its micro-batch k
// holds the samples some rank's micro-batch holds (BatchNorm's statistics
// are over a micro-batch, so the partition must be the same, not only the
// batch), with train.grad_accumulation = data x micro-batches.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "paisoar/data/distributed_sampler.h"
#include "paisoar/tensor_parallel/sharding.h"
#include "paisoar/train/trainer.h"
#include "paisoar/train/zoo.h"
#include "paisoar/data/text_corpus.h"
#include "src/data/range_view.h"
#include "tests/support/synthetic_blobs.h"
#include "tests/support/thread_ranks.h"

namespace paisoar {
namespace {

constexpr int64_t kSteps = 4;

// `base` read in the order in which the one-rank run's micro-batches (of
// `micro` samples, data x micro_batches of them per step) hold the samples
// of the distributed run's: micro-batch m of rank r in a step is the
// reference's micro-batch m * data + r of that step.
class SameMicroBatches : public data::Dataset {
 public:
  SameMicroBatches(std::shared_ptr<const data::Dataset> base, uint64_t seed, int64_t data, int64_t micro_batches,
                   int64_t micro)
      : base_(std::move(base)), index_(static_cast<size_t>(base_->size())) {
    const int64_t n = base_->size();
    data::SamplerOptions o;
    o.seed = seed;
    const std::vector<int64_t> order = data::DistributedSampler(n, o).indices(0);  // the same on every world
    const int64_t per_step = data * micro_batches * micro;
    EXPECT_EQ(n % per_step, 0) << "the set must be whole steps";
    for (int64_t p1 = 0; p1 < n; ++p1) {
      const int64_t step = p1 / per_step, q = p1 % per_step / micro, j = p1 % micro;
      const int64_t m = q / data, r = q % data;  // the reference's micro-batch q is rank r's micro-batch m
      const int64_t p = r + data * ((step * micro_batches + m) * micro + j);
      index_[static_cast<size_t>(order[static_cast<size_t>(p1)])] = order[static_cast<size_t>(p)];
    }
  }
  int64_t size() const override { return base_->size(); }
  data::Example get(int64_t index, data::SampleRng& rng) const override {
    return base_->get(index_.at(static_cast<size_t>(index)), rng);
  }
  std::string describe(int64_t index) const override { return base_->describe(index_.at(static_cast<size_t>(index))); }

 private:
  std::shared_ptr<const data::Dataset> base_;
  std::vector<int64_t> index_;
};

struct Model {
  std::string name;
  bool splits = true;  // has tensor-parallel layers
  std::function<void(train::TrainConfig&)> configure;
  std::function<std::shared_ptr<const data::Dataset>(const train::TrainConfig&)> data;
};

std::shared_ptr<const data::Dataset> blobs(int64_t channels, int64_t side) {
  testing::SyntheticBlobsOptions o;
  o.size = 256;
  o.channels = channels;
  o.side = side;
  return std::make_shared<testing::SyntheticBlobs>(o);
}

// A text of 8 KiB for the byte-level gpt: words drawn from a small list.
std::string corpus_path() {
  static std::once_flag once;
  static std::string path = ::testing::TempDir() + "paisoar_layout_matrix_" + std::to_string(::getpid()) + ".txt";
  std::call_once(once, [] {
    const char* words[] = {"the ", "layout ", "of ", "each ", "rank ", "holds ", "a ", "shard, ", "and ", "stages\n"};
    std::ofstream out(path);
    uint64_t x = 12345;
    for (int i = 0; i < 1500; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      out << words[(x >> 33) % 10];
    }
  });
  return path;
}

const std::vector<Model>& models() {
  static const std::vector<Model> all = {
      {"fashion_cnn", true, [](train::TrainConfig&) {}, [](const train::TrainConfig&) { return blobs(1, 28); }},
      {"fashion_cnn_bn", true, [](train::TrainConfig&) {}, [](const train::TrainConfig&) { return blobs(1, 28); }},
      {"resnet18", false,
       [](train::TrainConfig& c) { c.optimizer.lr = 0.02; c.train.batch_size = 32; },
       [](const train::TrainConfig&) { return blobs(3, 16); }},
      {"gpt", true,
       [](train::TrainConfig& c) {
         c.data.format = "text";
         c.data.path = corpus_path();
         c.model.n_layer = 2;
         c.model.n_head = 2;
         c.model.n_embd = 32;
         c.model.block_size = 16;
       },
       [](const train::TrainConfig& c) {
         auto corpus = std::make_shared<data::TextCorpus>(c.data.path, c.model.block_size);
         return std::shared_ptr<const data::Dataset>(
             std::make_shared<data::RangeView>(corpus, 0, corpus->size() / 64 * 64));
       }},
  };
  return all;
}

struct Layout {
  int data, pipeline, tensor;
  int world() const { return data * pipeline * tensor; }
  int micro_batches() const { return pipeline > 1 ? 2 : 1; }
};

train::TrainConfig config_for(const Model& model, const Layout& l) {
  train::TrainConfig c;
  c.run_dir = ::testing::TempDir() + "paisoar_layout_matrix_run_" + std::to_string(::getpid());
  c.checkpoint.resume = false;
  c.checkpoint.every_steps = 0;
  c.amp.dtype = train::AmpDtype::FP32;
  c.model.name = model.name;
  c.data.workers = 0;
  c.train.batch_size = 16;
  c.train.max_steps = kSteps;
  c.train.log_every = 1000;
  c.schedule.warmup_steps = 0;
  c.eval.every_epochs = 0;
  c.profiler.enabled = false;
  c.profiler.memory = false;
  c.memory.predict = false;
  c.optimizer.lr = 0.05;
  model.configure(c);
  c.parallel.data = l.data;
  c.parallel.pipeline = l.pipeline;
  c.parallel.tensor = l.tensor;
  c.parallel.micro_batches = l.micro_batches();
  return c;
}

struct Trained {
  std::map<std::string, torch::Tensor> initial, trained;
  std::map<std::string, tensor_parallel::ParameterSplit> splits;
  int tensor_rank = 0, tensor_size = 1;
  double final_loss = 0;
};

std::vector<Trained> train_layout(const train::TrainConfig& c, int world, std::shared_ptr<const data::Dataset> data) {
  static std::mutex build;  // make_task seeds torch's global generator
  std::vector<Trained> out(static_cast<size_t>(world));
  testing::run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    train::Trainer trainer(c, comm);
    train::TrainTask task;
    {
      std::lock_guard<std::mutex> lock(build);
      task = train::make_task(c, data, nullptr, trainer.tensor_group());
    }
    Trained& t = out[static_cast<size_t>(rank)];
    for (const auto& p : task.model->named_parameters()) t.initial[p.key()] = p.value().detach().clone();
    t.splits = tensor_parallel::parameter_splits(*task.model);
    if (auto group = trainer.tensor_group()) {
      t.tensor_rank = group->rank();
      t.tensor_size = group->size();
    }
    t.final_loss = trainer.fit(task).final_loss;
    for (const auto& p : task.model->named_parameters()) {
      // Another stage's parameter holds no memory on this rank: it is untrained here.
      const bool released = p.value().storage().nbytes() == 0;
      t.trained[p.key()] = released ? t.initial.at(p.key()) : p.value().detach().clone();
    }
  });
  return out;
}

// Every parameter a rank trained equals the reference's (its shard of it),
// every reference parameter was trained somewhere, and the ranks' mean loss
// is the reference's.
void expect_same(const std::vector<Trained>& runs, const Trained& reference) {
  constexpr double kRtol = 1e-4, kAtol = 1e-6;  // fp32: sums and allreduces add in other orders
  std::map<std::string, int> trained_by;
  double loss = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    const Trained& run = runs[r];
    loss += run.final_loss / static_cast<double>(runs.size());
    for (const auto& [name, value] : run.trained) {
      if (torch::equal(value, run.initial.at(name))) continue;  // another stage's
      ++trained_by[name];
      ASSERT_TRUE(reference.trained.count(name)) << name;
      torch::Tensor want = reference.trained.at(name);
      if (const auto split = run.splits.find(name); split != run.splits.end()) {
        want = tensor_parallel::shard_of(want, split->second.dim, run.tensor_rank, run.tensor_size, split->second.parts);
      }
      ASSERT_EQ(value.sizes(), want.sizes()) << name;
      EXPECT_TRUE(torch::allclose(value, want, kRtol, kAtol))
          << name << " on rank " << r << ": max difference " << (value - want).abs().max().item<double>();
    }
  }
  for (const auto& [name, value] : reference.trained) EXPECT_GT(trained_by[name], 0) << name << " trained nowhere";
  EXPECT_NEAR(loss, reference.final_loss, kRtol * std::abs(reference.final_loss)) << "the mean loss";
}

struct MatrixCase {
  size_t model;
  Layout layout;
};

class LayoutMatrix : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(LayoutMatrix, EveryZeroStageWithAndWithoutCheckpointingTrainsAsOneRank) {
  const Model& model = models()[GetParam().model];
  const Layout l = GetParam().layout;
  const train::TrainConfig base = config_for(model, l);
  // The reference: one rank, the same micro-batches.
  train::TrainConfig one = config_for(model, {1, 1, 1});
  one.train.grad_accumulation = l.data * l.micro_batches();
  const int64_t micro = base.train.batch_size / (l.data * l.micro_batches());
  const auto data = model.data(base);
  const auto reordered =
      std::make_shared<SameMicroBatches>(data, static_cast<uint64_t>(base.seed), l.data, l.micro_batches(), micro);
  const Trained reference = train_layout(one, 1, reordered)[0];
  for (int64_t zero = 0; zero <= 3; ++zero) {
    for (bool checkpointing : {false, true}) {
      SCOPED_TRACE("zero.stage " + std::to_string(zero) + ", activation_checkpointing " +
                   (checkpointing ? "[\"*\"]" : "off"));
      train::TrainConfig c = base;
      c.zero.stage = zero;
      if (checkpointing) c.activation_checkpointing = {"*"};
      expect_same(train_layout(c, l.world(), data), reference);
    }
  }
}

std::vector<MatrixCase> cases() {
  std::vector<MatrixCase> out;
  for (size_t m = 0; m < models().size(); ++m) {
    for (int data : {1, 2, 4}) {
      for (int pipeline : {1, 2}) {
        for (int tensor : {1, 2}) {
          if (tensor > 1 && !models()[m].splits) continue;
          const Layout l{data, pipeline, tensor};
          if (l.world() <= 4) out.push_back({m, l});
        }
      }
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Layouts, LayoutMatrix, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<MatrixCase>& info) {
                           const Layout& l = info.param.layout;
                           return models()[info.param.model].name + "_data" + std::to_string(l.data) + "_pipeline" +
                                  std::to_string(l.pipeline) + "_tensor" + std::to_string(l.tensor);
                         });

}  // namespace
}  // namespace paisoar
