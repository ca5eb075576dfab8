// TorchCommHook: a paisoar bucket handed to torch's hook as a c10d::GradBucket
// (the flat buffer itself, so in-place work on bucket.buffer() lands in it),
// its future waited for at the end of backward and its tensor copied back.
#include "torch_comm_hook.h"

#include <c10/util/Exception.h>
#include <c10/util/accumulate.h>

namespace paisoar::python {

void TorchCommHook::launch(size_t bucket, const torch::Tensor& flat, const ddp::BucketLayout& layout) {
  std::vector<size_t> offsets, lengths;
  std::vector<c10::IntArrayRef> sizes;  // views of `layout`, which outlives the bucket's hook calls
  for (size_t k = 0; k < layout.offsets.size(); ++k) {
    offsets.push_back(static_cast<size_t>(layout.offsets[k]));
    lengths.push_back(static_cast<size_t>(c10::multiply_integers(layout.shapes[k])));
    sizes.emplace_back(layout.shapes[k]);
  }
  count_bytes(flat);
  c10d::GradBucket grad_bucket(bucket, layout.bucket_count, flat, std::move(offsets), std::move(lengths),
                               std::move(sizes), layout.parameters, std::nullopt);
  pending_[bucket] = hook_->runHook(grad_bucket);
}

void TorchCommHook::finish(size_t bucket, const torch::Tensor& flat, const ddp::BucketLayout&) {
  auto found = pending_.find(bucket);
  TORCH_INTERNAL_ASSERT(found != pending_.end(), "finish() of a bucket never launched");
  auto future = std::move(found->second);
  pending_.erase(found);
  future->wait();
  const at::Tensor result = hook_->parseHookResult(future->value());
  TORCH_CHECK(result.numel() == flat.numel(),
              "DistributedDataParallel: the communication hook's future holds a tensor of ", result.numel(),
              " elements for a bucket of ", flat.numel(),
              "; return a future of one tensor shaped like bucket.buffer()");
  if (!result.is_same(flat)) flat.copy_(result.reshape({-1}));
}

}  // namespace paisoar::python
