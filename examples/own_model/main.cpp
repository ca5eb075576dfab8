// A user's own model and data set trained by paisoar's Trainer: a small MLP
// that classifies points of three interleaved spirals. Run it with
//   paisoar launch --nproc_per_node 2 -- build/bin/example_own_model [--set key=value ...]
// (or directly: it then trains on one rank). Everything the config offers
// (bf16, compression, accumulation, LARS/LAMB, schedules) applies unchanged.
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include "paisoar/comm.h"
#include "paisoar/data/dataset.h"
#include "paisoar/train/trainer.h"

namespace {

// The user's model: any torch::nn module with a forward(Tensor).
struct SpiralNetImpl : torch::nn::Module {
  SpiralNetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(2, 64));
    fc2 = register_module("fc2", torch::nn::Linear(64, 64));
    out = register_module("out", torch::nn::Linear(64, 3));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return out(torch::relu(fc2(torch::relu(fc1(x)))));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, out{nullptr};
};
TORCH_MODULE(SpiralNet);

// The user's data: implement size(), get(), num_classes() and describe().
class Spirals : public paisoar::data::Dataset {
 public:
  Spirals(int64_t n, uint64_t salt) : n_(n), salt_(salt) {}
  int64_t size() const override { return n_; }
  paisoar::data::Example get(int64_t i, paisoar::data::SampleRng&) const override {
    paisoar::data::SampleRng noise(salt_, 0, static_cast<uint64_t>(i));  // fixed per sample
    const int64_t label = i % 3;
    const double t = noise.uniform(0.0, 1.0);
    const double angle = 4.0 * t + 2.0 * M_PI * label / 3.0 + noise.uniform(-0.15, 0.15);
    const float x = static_cast<float>(t * std::cos(angle)), y = static_cast<float>(t * std::sin(angle));
    return {torch::tensor({x, y}), label};
  }
  int64_t num_classes() const override { return 3; }
  std::string describe(int64_t i) const override { return "spiral point " + std::to_string(i); }

 private:
  int64_t n_;
  uint64_t salt_;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> overrides = {"amp.dtype=fp32", "optimizer.lr=0.2", "train.epochs=8",
                                        "train.batch_size=64", "train.log_every=50",
                                        "run_dir=runs/own_model", "data.workers=1"};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--set") overrides.push_back(argv[i + 1]);
  }
  auto config = paisoar::train::load_config("", overrides);
  // Launched: join the job; run directly: a group of one.
  auto comm = std::getenv("WORLD_SIZE")
                  ? paisoar::comm::Communicator::from_env()
                  : paisoar::comm::Communicator::create(paisoar::comm::Store::hash(), 0, 1);
  torch::manual_seed(0);
  auto task = paisoar::train::TrainTask::of(SpiralNet(), std::make_shared<Spirals>(3072, 1),
                                            std::make_shared<Spirals>(600, 2));
  const auto result = paisoar::train::Trainer(config, comm).fit(task);
  if (comm->rank() == 0) std::printf("spirals: accuracy %.1f%%\n", result.accuracy);
  return result.accuracy > 80.0 ? 0 : 1;
}
