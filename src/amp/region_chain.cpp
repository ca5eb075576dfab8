// RegionChain: the runners that took a region, composed innermost first.
#include "paisoar/amp/region_chain.h"

#include <utility>

namespace paisoar::amp {

RegionChain::RegionChain(std::vector<RegionRunner*> outermost_first) {
  for (RegionRunner* r : outermost_first) {
    if (r != nullptr) runners_.push_back(r);
  }
  took_.assign(runners_.size(), 0);
}

bool RegionChain::takes(const std::string& name) {
  bool any = false;
  for (size_t i = 0; i < runners_.size(); ++i) {
    took_[i] = runners_[i]->takes(name) ? 1 : 0;
    any = any || took_[i];
  }
  return any;
}

torch::Tensor RegionChain::run(const std::string& name, Fn fn, const torch::Tensor& x,
                               std::vector<torch::Tensor> params) {
  // Compose now: a region nested in fn asks takes() again and overwrites took_.
  for (size_t i = runners_.size(); i-- > 0;) {
    if (!took_[i]) continue;
    fn = [runner = runners_[i], name, inner = std::move(fn), params](const torch::Tensor& in) {
      return runner->run(name, inner, in, params);
    };
  }
  return fn(x);
}

}  // namespace paisoar::amp
