// A contiguous slice [begin, end) of another data set, for scoring where each
// rank takes its own slice exactly once (no padding, unlike the sampler).
#pragma once

#include <memory>

#include "paisoar/data/dataset.h"

namespace paisoar::data {

class RangeView : public Dataset {
 public:
  RangeView(std::shared_ptr<const Dataset> base, int64_t begin, int64_t end)
      : base_(std::move(base)), begin_(begin), end_(end) {}
  int64_t size() const override { return end_ - begin_; }
  Example get(int64_t index, SampleRng& rng) const override {
    return base_->get(begin_ + index, rng);
  }
  int64_t num_classes() const override { return base_->num_classes(); }
  std::string describe(int64_t index) const override { return base_->describe(begin_ + index); }
  std::string describe_label(int64_t index) const override { return base_->describe_label(begin_ + index); }

 private:
  std::shared_ptr<const Dataset> base_;
  int64_t begin_, end_;
};

}  // namespace paisoar::data
