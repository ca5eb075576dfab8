// `paisoar train`: the main job. Data-parallel mixed-precision training of the
// reference CNN on Fashion-MNIST across the launched ranks: each rank reads its
// shard of every epoch, DDP averages gradients during backward, bf16 autocast
// (or fp32), LR warmup then cosine, gradient clipping, a non-finite loss check,
// and test accuracy at the end. The config-file Trainer will generalise it.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include <ATen/CPUGeneratorImpl.h>

#include "apps/paisoar-core/commands.h"
#include "paisoar/amp.h"
#include "paisoar/comm.h"
#include "paisoar/data/idx.h"
#include "paisoar/ddp.h"
#include "paisoar/models.h"
#include "paisoar/optim.h"

namespace paisoar::app {
namespace {

struct TrainOptions {
  int nproc = 2;  // ranks when started without a launcher
  std::string data = "/usr/share/datasets/fashion-mnist";
  int64_t train_images = 12800;  // 0: all 60000
  int64_t test_images = 2000;    // 0: all 10000
  int epochs = 1;
  int64_t batch = 64;  // per rank
  double lr = 0.05;    // for a global batch of 64; scaled linearly
  std::string precision = "bf16";
  std::string compression = "none";
  int log_every = 20;
};

// Fashion-MNIST's mean and standard deviation of pixel values in [0, 1].
constexpr double kMean = 0.2860, kStd = 0.3530;

std::pair<torch::Tensor, torch::Tensor> load(const TrainOptions& o, const std::string& split,
                                             int64_t limit) {
  auto images = data::read_idx(o.data + "/" + split + "-images-idx3-ubyte.gz");
  auto labels = data::read_idx(o.data + "/" + split + "-labels-idx1-ubyte.gz");
  const int64_t n = limit > 0 ? std::min(limit, images.size(0)) : images.size(0);
  auto x = (images.narrow(0, 0, n).unsqueeze(1).to(torch::kFloat) / 255.0 - kMean) / kStd;
  return {x, labels.narrow(0, 0, n).to(torch::kLong)};
}

int run_train(const TrainOptions& o, int argc, char** argv) {
  relaunch_unless_launched(o.nproc, argc, argv);
  auto comm = comm::Communicator::from_env();
  const int rank = comm->rank(), world = comm->size();
  auto [x, y] = load(o, "train", o.train_images);
  auto [tx, ty] = load(o, "t10k", o.test_images);
  const int64_t per_rank = x.size(0) / world;  // every rank takes the same number of steps
  const int64_t steps_per_epoch = per_rank / o.batch;
  TORCH_CHECK(steps_per_epoch > 0, "--train-images ", x.size(0), " gives rank ", rank,
              " fewer than one batch of ", o.batch, "; use more images or a smaller --batch");

  torch::manual_seed(0);
  models::FashionCnn model;
  ddp::DdpOptions ddp_options;
  ddp_options.compression.type = ddp::parse_compression(o.compression);
  DistributedDataParallel<models::FashionCnn> ddp(model, comm, ddp_options);
  const double lr = optim::scaled_lr(o.lr, o.batch * world, 64);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(lr).momentum(0.9));
  optim::LrScheduleOptions schedule_options;
  schedule_options.total_steps = steps_per_epoch * o.epochs;
  schedule_options.warmup_steps = std::min<int64_t>(20, schedule_options.total_steps / 5);
  schedule_options.decay = optim::LrDecay::Cosine;
  optim::LrSchedule schedule(opt, schedule_options);
  amp::FiniteLossCheck finite_loss({}, comm);
  amp::AutocastOptions autocast_options;
  autocast_options.enabled = o.precision == "bf16";
  if (rank == 0) {
    std::printf("paisoar train: FashionCnn on %lld Fashion-MNIST images, %d ranks x batch %lld, "
                "%s, compression %s, lr %.3g (warmup %lld, cosine over %lld steps)\n",
                static_cast<long long>(x.size(0)), world, static_cast<long long>(o.batch),
                o.precision.c_str(), o.compression.c_str(), lr,
                static_cast<long long>(schedule_options.warmup_steps),
                static_cast<long long>(schedule_options.total_steps));
  }

  int64_t step = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    // The same permutation on every rank (seeded by epoch); rank r takes every world-th.
    auto order = torch::randperm(x.size(0), torch::make_generator<at::CPUGeneratorImpl>(epoch),
                                 torch::kLong)
                     .narrow(0, rank, per_rank * world - rank)
                     .slice(0, 0, c10::nullopt, world);
    double loss_sum = 0;
    for (int64_t i = 0; i < steps_per_epoch; ++i, ++step) {
      auto idx = order.narrow(0, i * o.batch, o.batch);
      opt.zero_grad();
      torch::Tensor loss;
      {
        amp::autocast guard(autocast_options);
        loss = torch::cross_entropy_loss(ddp(x.index_select(0, idx)), y.index_select(0, idx));
      }
      if (!finite_loss(loss, step)) continue;
      loss.backward();
      optim::clip_grad_norm_(model->parameters(), 5.0);
      opt.step();
      schedule.step();
      loss_sum += loss.item<double>();
      if (rank == 0 && ((step + 1) % o.log_every == 0 || i + 1 == steps_per_epoch)) {
        const auto& stats = ddp.reducer().last_stats();
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("epoch %d step %lld/%lld  loss %.4f  lr %.4f  %.0f ms/step  "
                    "(last step: backward %.0f ms, exposed comm %.1f ms)\n",
                    epoch, static_cast<long long>(step + 1),
                    static_cast<long long>(schedule_options.total_steps), loss_sum / (i + 1),
                    schedule.get_last_lr()[0], 1e3 * elapsed / (step + 1), 1e3 * stats.backward_s,
                    1e3 * stats.exposed_comm_s);
        std::fflush(stdout);
      }
    }
  }

  // Test accuracy: each rank scores a slice, one allreduce adds them up.
  model->eval();
  torch::NoGradGuard no_grad;
  const int64_t begin = tx.size(0) * rank / world, end = tx.size(0) * (rank + 1) / world;
  torch::Tensor counts = torch::zeros({2});
  for (int64_t i = begin; i < end; i += 256) {
    const int64_t n = std::min<int64_t>(256, end - i);
    amp::autocast guard(autocast_options);
    auto pred = model->forward(tx.narrow(0, i, n)).argmax(1);
    counts[0] += pred.eq(ty.narrow(0, i, n)).sum().item<double>();
    counts[1] += n;
  }
  comm->allreduce(counts).wait();
  if (rank == 0) {
    std::printf("test accuracy %.2f%% on %lld images after %lld steps (%.1f s)\n",
                100.0 * counts[0].item<double>() / counts[1].item<double>(),
                static_cast<long long>(counts[1].item<double>()), static_cast<long long>(step),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  auto* cmd = app.add_subcommand(
      "train", "data-parallel mixed-precision training of the reference CNN on Fashion-MNIST "
               "(starts 2 ranks itself when run without `paisoar launch`)");
  cmd->add_option("--nproc", o->nproc, "ranks to start when not launched")->check(CLI::Range(1, 64));
  cmd->add_option("--data", o->data, "directory with the Fashion-MNIST IDX files")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--train-images", o->train_images, "training images to use (0: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--test-images", o->test_images, "test images to score (0: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--epochs", o->epochs)->check(CLI::Range(1, 1000));
  cmd->add_option("--batch", o->batch, "batch per rank")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--lr", o->lr, "learning rate for a global batch of 64 (scaled linearly)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--precision", o->precision, "bf16 (autocast) or fp32")
      ->check(CLI::IsMember({"bf16", "fp32"}));
  cmd->add_option("--compression", o->compression, "none, fp16, bf16, int8 or powersgd")
      ->check(CLI::IsMember({"none", "fp16", "bf16", "int8", "powersgd"}));
  cmd->add_option("--log-every", o->log_every, "steps between progress lines")->check(CLI::Range(1, 1000000));
  return [o](int argc, char** argv) { return run_train(*o, argc, argv); };
}

}  // namespace paisoar::app
