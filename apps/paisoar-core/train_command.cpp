// `paisoar train`: the main job. Data-parallel mixed-precision training of the
// reference CNN on Fashion-MNIST across the launched ranks: each rank's
// DataLoader reads its shard of every epoch (worker threads prefetch, optional
// RandomAffine augmentation), DDP averages gradients during backward, bf16 autocast
// (or fp32), LR warmup then cosine, gradient clipping, a non-finite loss check,
// and test accuracy at the end. The config-file Trainer will generalise it.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "apps/paisoar-core/commands.h"
#include "paisoar/amp.h"
#include "paisoar/comm.h"
#include "paisoar/data/data_loader.h"
#include "paisoar/data/idx.h"
#include "paisoar/data/idx_dataset.h"
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
  int64_t workers = 1;  // loader threads per rank
  bool augment = false;  // RandomAffine(10 degrees, 10% shift)
  double lr = 0.05;    // for a global batch of 64; scaled linearly
  std::string precision = "bf16";
  std::string compression = "none";
  int log_every = 20;
};

std::shared_ptr<data::IdxDataset> open_split(const TrainOptions& o, const std::string& split,
                                             int64_t limit, data::TransformList augment = {}) {
  data::IdxDatasetOptions options;
  options.limit = limit;
  return std::make_shared<data::IdxDataset>(o.data + "/" + split + "-images-idx3-ubyte.gz",
                                            o.data + "/" + split + "-labels-idx1-ubyte.gz",
                                            data::fashion_mnist_pipeline(std::move(augment)), options);
}

// The whole (small) test split as one normalised tensor, for scoring.
std::pair<torch::Tensor, torch::Tensor> test_tensors(const data::IdxDataset& test) {
  auto x = (test.images().unsqueeze(1).to(torch::kFloat) / 255.0 - data::kFashionMnistMean) /
           data::kFashionMnistStd;
  return {x, test.labels()};
}

int run_train(const TrainOptions& o, int argc, char** argv) {
  relaunch_unless_launched(o.nproc, argc, argv);
  auto comm = comm::Communicator::from_env();
  const int rank = comm->rank(), world = comm->size();
  data::TransformList augment;
  if (o.augment) augment.push_back(std::make_shared<data::RandomAffine>(10.0, std::array<double, 2>{0.1, 0.1}));
  auto train_set = open_split(o, "train", o.train_images, std::move(augment));
  auto [tx, ty] = test_tensors(*open_split(o, "t10k", o.test_images));
  data::DataLoaderOptions loader_options;
  loader_options.batch_size = o.batch;
  loader_options.workers = o.workers;
  loader_options.rank = rank;
  loader_options.world_size = world;
  loader_options.drop_last = true;  // equal batches; DDP needs every rank to step together anyway
  data::DataLoader loader(train_set, loader_options);
  const int64_t steps_per_epoch = loader.batches_per_epoch();
  TORCH_CHECK(steps_per_epoch > 0, "--train-images ", train_set->size(), " gives rank ", rank,
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
                static_cast<long long>(train_set->size()), world, static_cast<long long>(o.batch),
                o.precision.c_str(), o.compression.c_str(), lr,
                static_cast<long long>(schedule_options.warmup_steps),
                static_cast<long long>(schedule_options.total_steps));
  }

  int64_t step = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    loader.start_epoch(epoch);
    double loss_sum = 0, wait_sum = 0;
    for (int64_t i = 0; auto batch = loader.next(); ++i, ++step) {
      wait_sum += batch->wait_s;
      opt.zero_grad();
      torch::Tensor loss;
      {
        amp::autocast guard(autocast_options);
        loss = torch::cross_entropy_loss(ddp(batch->data), batch->labels);
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
                    "(data wait %.1f ms/step; last step: backward %.0f ms, exposed comm %.1f ms)\n",
                    epoch, static_cast<long long>(step + 1),
                    static_cast<long long>(schedule_options.total_steps), loss_sum / (i + 1),
                    schedule.get_last_lr()[0], 1e3 * elapsed / (step + 1), 1e3 * wait_sum / (i + 1),
                    1e3 * stats.backward_s, 1e3 * stats.exposed_comm_s);
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
  cmd->add_option("--workers", o->workers, "data loader threads per rank (0: load in the training thread)")
      ->check(CLI::Range(0, 64));
  cmd->add_flag("--augment", o->augment, "random rotation (10 degrees) and shift (10%) of training images");
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
