// ParallelMlpClassifier and ParallelFashionCnn: the plain models' replicated
// modules shared, their split Linears cut from the plain ones, their layers
// built by the plain models' own layer functions.
#include "paisoar/tensor_parallel/parallel_classifiers.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>

namespace paisoar::tensor_parallel {

ParallelMlpClassifierImpl::ParallelMlpClassifierImpl(const models::MlpImpl& full, Group group)
    : options_(full.options()) {
  TORCH_CHECK(group != nullptr, "ParallelMlpClassifier: the tensor-parallel group is null");
  const auto& widths = options_.hidden;
  TORCH_CHECK_VALUE(!widths.empty() && widths.size() % 2 == 0,
                    "model.hidden: tensor parallelism splits the mlp's hidden layers in pairs (column-, then "
                    "row-parallel); give an even number of widths, not ", widths.size());
  hidden = register_module("hidden", torch::nn::ModuleList());
  ColumnParallelLinearOptions column;
  column.gather_output = false;
  RowParallelLinearOptions row;
  row.input_is_parallel = true;
  int64_t width = options_.in_features;
  for (size_t i = 0; i < widths.size(); i += 2) {
    ColumnParallelLinear first(width, widths[i], group, column);
    RowParallelLinear second(widths[i], widths[i + 1], group, row);
    first->load_full(torch::nn::Linear(full.hidden->ptr<torch::nn::LinearImpl>(i)));
    second->load_full(torch::nn::Linear(full.hidden->ptr<torch::nn::LinearImpl>(i + 1)));
    hidden->push_back(first);
    hidden->push_back(second);
    pairs_.emplace_back(first, second);
    width = widths[i + 1];
  }
  head = register_module("head", full.head);
}

torch::Tensor ParallelMlpClassifierImpl::forward(torch::Tensor x) { return models::run_layers(layers(), x); }

std::vector<models::Layer> ParallelMlpClassifierImpl::layers() {
  std::vector<models::Layer> out;
  for (size_t b = 0; b < pairs_.size(); ++b) {
    auto [column, row] = pairs_[b];
    out.push_back(models::mlp_hidden_layer("hidden." + std::to_string(2 * b), column.ptr(),
                                           [c = column.ptr()](const torch::Tensor& x) { return c->forward(x); }, b == 0,
                                           options_.dropout));
    out.push_back(models::mlp_hidden_layer("hidden." + std::to_string(2 * b + 1), row.ptr(),
                                           [r = row.ptr()](const torch::Tensor& x) { return r->forward(x); }, false,
                                           options_.dropout));
  }
  out.push_back({"head", {{"head", head.ptr()}}, [fc = head](const torch::Tensor& x) mutable { return fc(x); }});
  return out;
}

ParallelFashionCnnImpl::ParallelFashionCnnImpl(const models::FashionCnnImpl& full, Group group) {
  TORCH_CHECK(group != nullptr, "ParallelFashionCnn: the tensor-parallel group is null");
  conv1 = register_module("conv1", full.conv1);
  if (full.bn1) bn1 = register_module("bn1", full.bn1);
  conv2 = register_module("conv2", full.conv2);
  if (full.bn2) bn2 = register_module("bn2", full.bn2);
  ColumnParallelLinearOptions column;
  column.gather_output = false;
  RowParallelLinearOptions row;
  row.input_is_parallel = true;
  const auto& fc1_full = full.fc1->weight;
  const auto& fc2_full = full.fc2->weight;
  fc1 = register_module("fc1", ColumnParallelLinear(fc1_full.size(1), fc1_full.size(0), group, column));
  fc2 = register_module("fc2", RowParallelLinear(fc2_full.size(1), fc2_full.size(0), group, row));
  fc1->load_full(full.fc1);
  fc2->load_full(full.fc2);
}

torch::Tensor ParallelFashionCnnImpl::forward(torch::Tensor x) { return models::run_layers(layers(), x); }

std::vector<models::Layer> ParallelFashionCnnImpl::layers() {
  return {models::fashion_cnn_conv_layer("conv1", conv1, bn1, "bn1"),
          models::fashion_cnn_conv_layer("conv2", conv2, bn2, "bn2"),
          {"fc1", {{"fc1", fc1.ptr()}}, [fc = fc1](const torch::Tensor& x) mutable { return torch::relu(fc(x.flatten(1))); }},
          {"fc2", {{"fc2", fc2.ptr()}}, [fc = fc2](const torch::Tensor& x) mutable { return fc(x); }}};
}

}  // namespace paisoar::tensor_parallel
