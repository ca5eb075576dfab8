// evaluate: the replica's slice of the evaluation set through the loader,
// hits counted by the ranks that hold the logits, one allreduce of the counts.
#include "src/train/trainer_evaluate.h"

#include <torch/torch.h>

#include <algorithm>

#include "paisoar/data/data_loader.h"
#include "src/data/range_view.h"

namespace paisoar::train {

double evaluate(const TrainTask& task, comm::Communicator& comm, const EvalRole& role, int64_t workers,
                const Precision& precision, int64_t limit) {
  const int64_t n = limit > 0 ? std::min(limit, task.eval_data->size()) : task.eval_data->size();
  const int64_t begin = n * role.index / role.count, end = n * (role.index + 1) / role.count;
  torch::Tensor counts = torch::zeros({2}, torch::kDouble);
  if (end > begin) {
    data::DataLoaderOptions o;
    o.batch_size = 256;
    o.workers = workers;
    o.shuffle = false;
    o.on_error = role.on_error;
    data::DataLoader loader(std::make_shared<data::RangeView>(task.eval_data, begin, end), o);
    task.model->eval();
    torch::NoGradGuard no_grad;
    double correct = 0, total = 0;
    while (auto batch = loader.next()) {
      PrecisionContext context(precision, role.regions);
      const auto device = task.model->parameters().empty() ? torch::Device(torch::kCPU)
                                                             : task.model->parameters()[0].device();
      const torch::Tensor logits = role.forward(batch->data.to(device));
      // The class, or each position's next token: the labels' shape.
      if (role.counts) {
        correct += logits.argmax(-1).eq(batch->labels.to(device)).sum().item<double>();
        total += static_cast<double>(batch->labels.numel());
      }
    }
    task.model->train();
    if (role.counts) {
      counts[0] = correct;
      counts[1] = total;
    }
  }
  comm.allreduce(counts).wait();
  return 100.0 * counts[0].item<double>() / std::max(1.0, counts[1].item<double>());
}

}  // namespace paisoar::train
