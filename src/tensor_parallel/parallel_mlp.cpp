// ParallelMlp: column-parallel c_fc, GELU on this rank's hidden units,
// row-parallel c_proj.
#include "paisoar/tensor_parallel/parallel_mlp.h"

namespace paisoar::tensor_parallel {

ParallelMlpImpl::ParallelMlpImpl(const models::GptOptions& options, Group group) : dropout_(options.dropout) {
  ColumnParallelLinearOptions fc;
  fc.bias = options.bias;
  fc.gather_output = false;
  RowParallelLinearOptions proj;
  proj.bias = options.bias;
  proj.input_is_parallel = true;
  c_fc = register_module("c_fc", ColumnParallelLinear(options.n_embd, 4 * options.n_embd, group, fc));
  c_proj = register_module("c_proj", RowParallelLinear(4 * options.n_embd, options.n_embd, group, proj));
}

torch::Tensor ParallelMlpImpl::forward(const torch::Tensor& x) {
  return torch::dropout(c_proj(torch::gelu(c_fc(x))), dropout_, is_training());
}

void ParallelMlpImpl::load_full(const models::GptMlpImpl& full) {
  c_fc->load_full(full.c_fc);
  c_proj->load_full(full.c_proj);
}

}  // namespace paisoar::tensor_parallel
