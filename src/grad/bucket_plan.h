// Which gradients share a bucket: walk the parameters in the order their
// gradients are expected, fill one open bucket per dtype/device up to its cap
// (a small cap for the first), and order buckets by when they can start.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace paisoar::grad::detail {

// Returns buckets of parameter indices. `order` lists every index of `params`
// once, earliest-ready first; each bucket holds one dtype and device, its
// indices in `order`'s order; buckets are sorted by their earliest member.
std::vector<std::vector<size_t>> plan_buckets(const std::vector<torch::Tensor>& params,
                                              const std::vector<size_t>& order,
                                              int64_t first_cap_bytes, int64_t cap_bytes);
// The same with a cap per bucket: the k-th bucket of a dtype/device closes at
// caps_bytes[min(k, caps_bytes.size() - 1)] (torch's bucket_cap_mb_list).
std::vector<std::vector<size_t>> plan_buckets(const std::vector<torch::Tensor>& params,
                                              const std::vector<size_t>& order,
                                              const std::vector<int64_t>& caps_bytes);

}  // namespace paisoar::grad::detail
