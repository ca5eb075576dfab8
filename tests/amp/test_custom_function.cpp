// custom_fwd/custom_bwd: inputs cast as asked, and backward runs under the
// autocast state the caller of forward had, even though backward() itself is
// called outside any guard (PyTorch's semantics).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/amp/autocast.h"
#include "paisoar/amp/custom_function.h"

using paisoar::amp::autocast;
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

namespace {

// Records the dtype matmul produced in the last backward.
thread_local torch::Dtype backward_mm_dtype = torch::kDouble;

template <bool CastToFloat>
struct Matmul : torch::autograd::Function<Matmul<CastToFloat>> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor a, torch::Tensor b) {
    std::optional<c10::ScalarType> cast;
    if (CastToFloat) cast = torch::kFloat;
    paisoar::amp::custom_fwd amp(ctx, cast);
    a = amp.cast(a);
    b = amp.cast(b);
    ctx->save_for_backward({a, b});
    return torch::mm(a, b);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    paisoar::amp::custom_bwd amp(ctx);
    auto saved = ctx->get_saved_variables();
    auto ga = torch::mm(grads[0], saved[1].t());
    auto gb = torch::mm(saved[0].t(), grads[0]);
    backward_mm_dtype = ga.scalar_type();
    return {ga, gb};
  }
};

struct NoFwdRecord : torch::autograd::Function<NoFwdRecord> {
  static torch::Tensor forward(AutogradContext*, torch::Tensor a) { return a * 2; }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    paisoar::amp::custom_bwd amp(ctx);
    return {grads[0] * 2};
  }
};

TEST(CustomFunction, WithoutCastInputsForwardFollowsTheCaller) {
  auto a = torch::randn({4, 3}, torch::requires_grad());
  auto b = torch::randn({3, 2}, torch::requires_grad());
  torch::Tensor y;
  {
    autocast guard;
    y = Matmul<false>::apply(a, b);
  }
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  y.sum().backward();  // outside the guard
  EXPECT_EQ(backward_mm_dtype, torch::kBFloat16);
  EXPECT_EQ(a.grad().scalar_type(), torch::kFloat);  // autograd casts back to the leaf's dtype
}

TEST(CustomFunction, CastInputsRunsForwardInThatDtype) {
  auto a = torch::randn({4, 3}, torch::requires_grad());
  auto b = torch::randn({3, 2}, torch::requires_grad());
  torch::Tensor y;
  {
    autocast guard;
    y = Matmul<true>::apply(a.to(torch::kBFloat16), b);
  }
  EXPECT_EQ(y.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::allclose(y, torch::mm(a.to(torch::kBFloat16).to(torch::kFloat), b)));
  y.sum().backward();
  // With cast_inputs backward runs without autocast, as torch.cuda.amp.custom_fwd records.
  EXPECT_EQ(backward_mm_dtype, torch::kFloat);
}

TEST(CustomFunction, OutsideAutocastNothingChanges) {
  auto a = torch::randn({4, 3}, torch::requires_grad());
  auto b = torch::randn({3, 2}, torch::requires_grad());
  auto y = Matmul<true>::apply(a, b);
  EXPECT_EQ(y.scalar_type(), torch::kFloat);
  {
    autocast guard;  // backward called inside a guard still uses forward's state: off
    y.sum().backward();
  }
  EXPECT_EQ(backward_mm_dtype, torch::kFloat);
  EXPECT_TRUE(torch::allclose(a.grad(), torch::ones({4, 2}).mm(b.t())));
}

TEST(CustomFunction, BackwardWithoutForwardRecordSaysWhatToAdd) {
  auto a = torch::randn({3}, torch::requires_grad());
  auto y = NoFwdRecord::apply(a);
  try {
    y.sum().backward();
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("did not construct a paisoar::amp::custom_fwd"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
