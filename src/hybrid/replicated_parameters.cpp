// tensor_replicated_parameters: every parameter minus the shards the
// tensor-parallel layers hold.
#include "paisoar/hybrid/replicated_parameters.h"

#include <unordered_set>

#include "paisoar/tensor_parallel/column_parallel_linear.h"
#include "paisoar/tensor_parallel/row_parallel_linear.h"
#include "paisoar/tensor_parallel/vocab_parallel_embedding.h"

namespace paisoar::hybrid {

std::vector<torch::Tensor> tensor_replicated_parameters(const torch::nn::Module& module) {
  std::unordered_set<const void*> sharded;
  const auto add = [&](const torch::Tensor& t) {
    if (t.defined()) sharded.insert(t.unsafeGetTensorImpl());
  };
  for (const auto& m : module.modules(/*include_self=*/true)) {
    if (const auto* c = dynamic_cast<const tensor_parallel::ColumnParallelLinearImpl*>(m.get())) {
      add(c->weight);
      add(c->bias);
    } else if (const auto* r = dynamic_cast<const tensor_parallel::RowParallelLinearImpl*>(m.get())) {
      add(r->weight);  // its bias is whole on every rank
    } else if (const auto* e = dynamic_cast<const tensor_parallel::VocabParallelEmbeddingImpl*>(m.get())) {
      add(e->weight);
    }
  }
  std::vector<torch::Tensor> replicated;
  for (const auto& p : module.parameters()) {
    if (!sharded.count(p.unsafeGetTensorImpl())) replicated.push_back(p);
  }
  return replicated;
}

}  // namespace paisoar::hybrid
