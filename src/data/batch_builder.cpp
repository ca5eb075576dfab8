// One batch, collated without torch::stack: each sample is copied into its row
// of a tensor allocated once, so worker threads do no intra-op parallel work.
#include "src/data/batch_builder.h"

#include <ATen/Context.h>
#include <torch/torch.h>

#include <cstring>
#include <string>

#include "paisoar/data/data_error.h"

namespace paisoar::data {
namespace {

std::string shape_string(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

Example checked_example(const Dataset& dataset, int64_t index, int64_t epoch,
                        const DataLoaderOptions& options) {
  SampleRng rng(options.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index));
  Example ex = dataset.get(index, rng);
  const int64_t classes = dataset.num_classes();
  if (classes > 0 && (ex.label < 0 || ex.label >= classes)) {
    throw DataError(dataset.describe_label(index) + ": label " + std::to_string(ex.label) +
                    " is outside [0, " + std::to_string(classes) + ") of the " + std::to_string(classes) +
                    " classes the data set has (model.num_classes for paisoar train); fix the label or the "
                    "number of classes");
  }
  if (!ex.data.defined()) {
    throw DataError(dataset.describe(index) + ": the data set returned no data");
  }
  return ex;
}

}  // namespace

Batch build_batch(const Dataset& dataset, const BatchRequest& request,
                  const DataLoaderOptions& options, BatchStoragePool* pool) {
  Batch batch;
  batch.epoch = request.epoch;
  batch.index = request.batch;
  std::vector<int64_t> labels, indices;
  std::vector<torch::Tensor> targets;  // when the samples have tensor targets
  labels.reserve(static_cast<size_t>(request.count));
  indices.reserve(static_cast<size_t>(request.count));
  int64_t first_index = -1;
  for (int64_t i = 0; i < request.count; ++i) {
    const int64_t index = request.indices[i];
    Example ex;
    try {
      ex = checked_example(dataset, index, request.epoch, options);
    } catch (const DataError& e) {
      if (options.on_error == OnError::Raise) throw;
      ++batch.skipped;
      if (batch.skipped_why.size() < LoaderStats::kReasonsKept) batch.skipped_why.push_back(e.what_without_backtrace());
      continue;
    }
    auto sample = ex.data.contiguous();
    if (!batch.data.defined()) {
      std::vector<int64_t> shape{request.count};
      for (int64_t d = 0; d < sample.dim(); ++d) shape.push_back(sample.size(d));
      auto tensor_options = torch::TensorOptions().dtype(sample.scalar_type());
      const bool pinned = options.pin_memory && at::hasCUDA();
      if (pinned) tensor_options = tensor_options.pinned_memory(true);
      batch.data = pool != nullptr && !pinned ? pool->empty(shape, sample.scalar_type())
                                              : torch::empty(shape, tensor_options);
      first_index = index;
    } else if (!sample.sizes().equals(batch.data.sizes().slice(1)) ||
               sample.scalar_type() != batch.data.scalar_type()) {
      throw DataError(dataset.describe(index) + ": shape " + shape_string(sample) + " (" +
                      std::string(c10::toString(sample.scalar_type())) + ") differs from " +
                      dataset.describe(first_index) + "'s " + shape_string(batch.data[0]) +
                      "; a batch needs equal shapes: add a Resize/CenterCrop or RandomResizedCrop");
    }
    const auto row = static_cast<int64_t>(labels.size());
    const size_t bytes = sample.numel() * sample.element_size();
    std::memcpy(static_cast<char*>(batch.data.data_ptr()) + row * bytes, sample.data_ptr(), bytes);
    if (!labels.empty() && ex.target.defined() != !targets.empty()) {
      throw DataError(dataset.describe(index) + (ex.target.defined() ? " has a tensor target but " : " has no tensor target but ") +
                      dataset.describe(first_index) + (ex.target.defined() ? " has none" : " has one") +
                      "; a data set gives every sample the same kind of target");
    }
    if (ex.target.defined()) targets.push_back(ex.target);
    labels.push_back(ex.label);
    indices.push_back(index);
  }
  const auto kept = static_cast<int64_t>(labels.size());
  if (!batch.data.defined()) {
    throw DataError("every sample of batch " + std::to_string(request.batch) + " (epoch " +
                    std::to_string(request.epoch) + ") is bad, the first because " +
                    (batch.skipped_why.empty() ? dataset.describe(request.indices[0]) : batch.skipped_why[0]) +
                    "; the data set looks broken, not one file");
  }
  if (kept < request.count) batch.data = batch.data.narrow(0, 0, kept);
  if (!targets.empty()) {
    try {
      batch.labels = torch::stack(targets);
    } catch (const c10::Error& e) {
      throw DataError(dataset.describe(first_index) + ": the batch's tensor targets differ in shape (" +
                      e.what_without_backtrace() + "); a batch needs equal shapes");
    }
  } else {
    batch.labels = torch::tensor(labels, torch::kLong);
  }
  batch.indices = torch::tensor(indices, torch::kLong);
  return batch;
}

}  // namespace paisoar::data
