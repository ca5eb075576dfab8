// The PowerSGD hook (Vogels et al. 2019): each gradient matrix M (n x m, the
// tensor viewed as [shape[0], rest]) is sent as P = M Q (n x r) and then
// Q = M^T P (m x r) after P is summed and orthonormalised, so the average is
// approximated by P Q^T at r(n + m) numbers instead of nm. Q is kept for the
// next step (warm start) and what the approximation lost is added back to the
// next gradient (error feedback). 1-D tensors and matrices too small to gain go
// uncompressed in the same first allreduce.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <limits>
#include <map>

#include "paisoar/comm/communicator.h"
#include "src/ddp/hooks/builtin_hooks.h"

namespace paisoar::ddp::detail {
namespace {

class PowerSgdHook : public CommHook {
 public:
  PowerSgdHook(std::shared_ptr<comm::Communicator> comm, const CompressionOptions& options)
      : comm_(std::move(comm)), options_(options) {
    TORCH_CHECK(options_.powersgd_rank >= 1,
                "CompressionOptions::powersgd_rank must be >= 1, got ", options_.powersgd_rank);
  }

  void launch(size_t bucket, const torch::Tensor& flat, const BucketLayout& layout) override {
    torch::NoGradGuard no_grad;
    auto& state = state_for(bucket, flat, layout);
    state.input = flat.to(torch::kFloat, false, /*copy=*/true);
    if (options_.error_feedback) state.input.add_(state.error);
    std::vector<torch::Tensor> parts;
    for (size_t k = 0; k < layout.shapes.size(); ++k) {
      const auto& mat = state.matrices[k];
      auto slice = state.input.narrow(0, layout.offsets[k], mat.rows * mat.cols);
      parts.push_back(mat.compressed ? slice.view({mat.rows, mat.cols}).mm(mat.q).reshape({-1})
                                     : slice);
    }
    state.first = torch::cat(parts);
    count_bytes(state.first);
    state.pending = comm_->allreduce(state.first, comm::ReduceOp::Sum);
  }

  void finish(size_t bucket, const torch::Tensor& flat, const BucketLayout& layout) override {
    torch::NoGradGuard no_grad;
    auto& state = state_.at(bucket);
    state.pending.wait();
    if (!torch::isfinite(state.first).all().item<bool>()) {
      // An overflow somewhere (the sum is the same on every rank, so all get
      // here): pass inf/NaN on for the GradScaler to skip the step, and keep Q
      // and the error feedback from being poisoned.
      flat.fill_(std::numeric_limits<double>::quiet_NaN());
      return;
    }
    const double world = comm_->size();
    torch::Tensor out = torch::empty_like(state.input);
    std::vector<torch::Tensor> ps, qs;
    int64_t at = 0;
    for (size_t k = 0; k < layout.shapes.size(); ++k) {
      auto& mat = state.matrices[k];
      auto dst = out.narrow(0, layout.offsets[k], mat.rows * mat.cols);
      if (!mat.compressed) {
        dst.copy_(state.first.narrow(0, at, dst.numel())).div_(world);
        at += dst.numel();
        continue;
      }
      auto p = state.first.narrow(0, at, mat.rows * mat.rank).view({mat.rows, mat.rank});
      at += p.numel();
      p = std::get<0>(torch::linalg_qr(p, "reduced"));  // the same on every rank
      auto m = state.input.narrow(0, layout.offsets[k], mat.rows * mat.cols).view({mat.rows, mat.cols});
      ps.push_back(p);
      qs.push_back(m.t().mm(p).reshape({-1}));
    }
    if (!qs.empty()) {
      torch::Tensor second = torch::cat(qs);
      count_bytes(second);
      comm_->allreduce(second, comm::ReduceOp::Sum).wait();
      second.div_(world);
      int64_t qat = 0;
      size_t j = 0;
      for (size_t k = 0; k < layout.shapes.size(); ++k) {
        auto& mat = state.matrices[k];
        if (!mat.compressed) continue;
        mat.q = second.narrow(0, qat, mat.cols * mat.rank).view({mat.cols, mat.rank}).clone();
        qat += mat.cols * mat.rank;
        out.narrow(0, layout.offsets[k], mat.rows * mat.cols)
            .view({mat.rows, mat.cols})
            .copy_(ps[j++].mm(mat.q.t()));
      }
    }
    if (options_.error_feedback) state.error = state.input - out;
    flat.copy_(out);
  }

  void reset() override { state_.clear(); }

 private:
  struct Matrix {
    int64_t rows = 0, cols = 0, rank = 0;
    bool compressed = false;
    torch::Tensor q;  // cols x rank, warm-started from the last step
  };
  struct State {
    std::vector<Matrix> matrices;
    torch::Tensor input, first, error;
    comm::Work pending;
  };

  State& state_for(size_t bucket, const torch::Tensor& flat, const BucketLayout& layout) {
    auto it = state_.find(bucket);
    if (it != state_.end()) return it->second;
    State state;
    for (size_t k = 0; k < layout.shapes.size(); ++k) {
      const auto& shape = layout.shapes[k];
      Matrix mat;
      int64_t numel = 1;
      for (auto d : shape) numel *= d;
      mat.rows = shape.size() >= 2 ? shape[0] : numel;
      mat.cols = shape.size() >= 2 && mat.rows > 0 ? numel / mat.rows : 1;
      mat.rank = std::min<int64_t>({options_.powersgd_rank, mat.rows, mat.cols});
      mat.compressed = shape.size() >= 2 && mat.rank * (mat.rows + mat.cols) < numel;
      if (mat.compressed) {
        // Equal on every rank: the seed depends only on the bucket and tensor.
        auto gen = at::detail::createCPUGenerator(options_.seed + 1000003 * bucket + k);
        mat.q = torch::randn({mat.cols, mat.rank}, gen, torch::kFloat).to(flat.device());
      } else {
        mat.rows = numel;
        mat.cols = 1;
      }
      state.matrices.push_back(std::move(mat));
    }
    state.error = torch::zeros({flat.numel()}, flat.options().dtype(torch::kFloat));
    return state_.emplace(bucket, std::move(state)).first->second;
  }

  std::shared_ptr<comm::Communicator> comm_;
  CompressionOptions options_;
  std::map<size_t, State> state_;
};

}  // namespace

std::unique_ptr<CommHook> make_powersgd_hook(std::shared_ptr<comm::Communicator> comm,
                                             const CompressionOptions& options) {
  return std::make_unique<PowerSgdHook>(std::move(comm), options);
}

}  // namespace paisoar::ddp::detail
