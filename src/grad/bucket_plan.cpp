// plan_buckets: greedy filling in gradient-ready order, one open bucket per
// (dtype, device), as torch's compute_bucket_assignment_by_size does.
#include "src/grad/bucket_plan.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace paisoar::grad::detail {

std::vector<std::vector<size_t>> plan_buckets(const std::vector<torch::Tensor>& params,
                                              const std::vector<size_t>& order,
                                              int64_t first_cap_bytes, int64_t cap_bytes) {
  return plan_buckets(params, order, std::vector<int64_t>{first_cap_bytes, cap_bytes});
}

std::vector<std::vector<size_t>> plan_buckets(const std::vector<torch::Tensor>& params,
                                              const std::vector<size_t>& order,
                                              const std::vector<int64_t>& caps_bytes) {
  TORCH_CHECK(!caps_bytes.empty(), "plan_buckets: no bucket cap");
  struct Open {
    std::vector<size_t> members;
    int64_t bytes = 0;
    size_t closed = 0;  // buckets this dtype/device has closed so far
  };
  std::map<std::pair<int, std::string>, Open> open;
  std::vector<std::vector<size_t>> buckets;
  for (size_t index : order) {
    const auto& p = params.at(index);
    auto& bucket = open[{static_cast<int>(p.scalar_type()), p.device().str()}];
    bucket.members.push_back(index);
    bucket.bytes += p.numel() * p.element_size();
    if (bucket.bytes >= caps_bytes[std::min(bucket.closed, caps_bytes.size() - 1)]) {
      buckets.push_back(std::move(bucket.members));
      bucket.members.clear();
      bucket.bytes = 0;
      ++bucket.closed;
    }
  }
  for (auto& [key, bucket] : open) {
    if (!bucket.members.empty()) buckets.push_back(std::move(bucket.members));
  }
  // Launch order: by the position in `order` of each bucket's first member.
  std::vector<size_t> position(params.size());
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  std::stable_sort(buckets.begin(), buckets.end(), [&](const auto& a, const auto& b) {
    return position[a.front()] < position[b.front()];
  });
  return buckets;
}

}  // namespace paisoar::grad::detail
