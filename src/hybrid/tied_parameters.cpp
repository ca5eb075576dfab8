// TiedParameters: which parameters several stages hold (by their names in
// the model), one group per holding set and data x tensor coordinate, and
// the sum of their gradients.
#include "paisoar/hybrid/tied_parameters.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace paisoar::hybrid {

std::unique_ptr<TiedParameters> TiedParameters::of(const models::LayerSequence& layers,
                                                   const pipeline::PartitionPlan& plan, const HybridMesh& mesh) {
  // Each parameter's name in the model and the stages whose layers use it.
  std::unordered_map<const void*, std::string> names;
  for (const auto& p : layers.model()->named_parameters()) names.emplace(p.value().unsafeGetTensorImpl(), p.key());
  std::map<std::string, std::set<int>> stages_of;
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    for (int l = plan.stages[s].begin; l < plan.stages[s].end; ++l) {
      for (const auto& p : layers.layer(static_cast<size_t>(l)).parameters()) {
        const auto it = names.find(p.unsafeGetTensorImpl());
        if (it != names.end() && p.requires_grad()) stages_of[it->second].insert(s);
      }
    }
  }
  std::map<std::set<int>, std::vector<std::string>> by_holders;
  for (const auto& [name, stages] : stages_of) {
    if (stages.size() > 1) by_holders[stages].push_back(name);
  }
  if (by_holders.empty()) return nullptr;
  auto tied = std::unique_ptr<TiedParameters>(new TiedParameters());
  const ParallelLayout& l = mesh.layout();
  const int stage = mesh.pipeline_rank();
  // Every rank creates every group in the same order (new_group's rule).
  for (const auto& [holders, tied_names] : by_holders) {
    for (int d = 0; d < l.data; ++d) {
      for (int t = 0; t < l.tensor; ++t) {
        std::vector<int> members;
        for (int s : holders) members.push_back((d * l.pipeline + s) * l.tensor + t);
        auto group = mesh.world()->new_group(members);
        if (group) tied->ties_.push_back({tied_names, group});
      }
    }
    if (holders.count(stage)) {
      for (const auto& n : tied_names) {
        tied->names_.push_back(n);
        if (*holders.begin() == stage) tied->counted_.push_back(n);
      }
    }
  }
  return tied;
}

bool TiedParameters::counts(const std::string& name) const {
  return std::find(counted_.begin(), counted_.end(), name) != counted_.end();
}

void TiedParameters::sum_gradients(const std::function<std::vector<torch::Tensor>(const std::string&)>& held) {
  for (const auto& tie : ties_) {
    std::vector<comm::Work> works;
    for (const auto& name : tie.names) {
      for (auto& g : held(name)) {
        TORCH_CHECK(g.defined(), "tied parameter '", name, "' has no gradient on this stage after backward; every "
                    "stage that holds it must use it");
        if (g.numel() > 0) works.push_back(tie.group->allreduce(g, comm::ReduceOp::Sum));
      }
    }
    for (auto& w : works) w.wait();
  }
}

}  // namespace paisoar::hybrid
