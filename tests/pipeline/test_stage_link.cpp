// The messages between neighbouring stages when receives are posted ahead
// from the last step's shapes, small payloads inline in the header message
// (src/pipeline/stage_link.h): whatever changes
// from one step to the next (a shape, a dtype, a tensor that becomes an error
// text or back, an empty tensor, one message more) arrives intact, and both
// ends remember the same shapes. A step cut short by a communication error
// leaves a Pipeline that refuses to run again instead of mixing up messages.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <future>
#include <optional>
#include <string>
#include <vector>

#include "paisoar/pipeline.h"
#include "src/pipeline/link_shapes.h"
#include "src/pipeline/stage_link.h"
#include "tests/pipeline/pipeline_testing.h"

using namespace paisoar;
using namespace paisoar::pipeline;
namespace wire = paisoar::pipeline::detail;

namespace {

// One message of a step: a tensor, or an error text when `error` is not empty.
struct Sent {
  torch::Tensor tensor;
  std::string error;
};

Sent tensor_of(std::vector<int64_t> shape, torch::ScalarType dtype, double base) {
  const int64_t n = c10::multiply_integers(shape);
  return Sent{(torch::arange(n, torch::kFloat64) + base).to(dtype).reshape(shape), ""};
}

Sent error_of(const std::string& text) { return Sent{torch::Tensor(), text}; }

}  // namespace

TEST(StageLink, MessagesThatChangeBetweenStepsArriveIntact) {
  using torch::kBFloat16;
  using torch::kFloat32;
  using torch::kInt64;
  // Floats of [170, 100] and more are larger than Inbox::kInlineBytes: their
  // receives are posted ahead apart from the header; the rest travel inline.
  const std::vector<std::vector<Sent>> steps = {
      {tensor_of({4, 3}, kFloat32, 0), tensor_of({2, 3}, kFloat32, 10), error_of("stage 0 failed: boom"),
       tensor_of({200, 100}, kFloat32, 0), tensor_of({170, 100}, kFloat32, 5)},
      // The same shapes: two inline, one late (the error text), two posted.
      {tensor_of({4, 3}, kFloat32, 100), tensor_of({2, 3}, kFloat32, 110), error_of("again"),
       tensor_of({200, 100}, kFloat32, 1), tensor_of({170, 100}, kFloat32, 6)},
      // A dtype with the same byte count, an error where a tensor was, a
      // tensor where an error was, an empty tensor and an error where posted
      // payloads were expected, and one message more.
      {tensor_of({8, 3}, kBFloat16, 1), error_of("now this one"), tensor_of({5}, kInt64, 7),
       tensor_of({0, 3}, kFloat32, 0), error_of("and this"), tensor_of({2, 2}, kFloat32, 3)},
      // Large where nothing was expected, and where a small one was.
      {tensor_of({8, 3}, kBFloat16, 2), error_of("still"), tensor_of({5}, kInt64, 8),
       tensor_of({300, 100}, kFloat32, 2), tensor_of({2, 2}, kFloat32, 4), tensor_of({300, 100}, kFloat32, 4)},
      // A large payload of another shape where one was posted; the rest fit.
      {tensor_of({8, 3}, kBFloat16, 3), error_of("still"), tensor_of({5}, kInt64, 9),
       tensor_of({250, 100}, kFloat32, 5), tensor_of({2, 2}, kFloat32, 5), tensor_of({300, 100}, kFloat32, 5)},
      // Fewer messages than the step before.
      {tensor_of({1}, kFloat32, 9)},
  };
  std::vector<std::optional<wire::MessageShape>> remembered[2];  // each end's memory after the run
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    wire::LinkShapes shapes(/*enabled=*/true);
    for (size_t s = 0; s < steps.size(); ++s) {
      SCOPED_TRACE("step " + std::to_string(s));
      const auto& step = steps[s];
      if (rank == 0) {
        wire::Outbox out(comm, &shapes);
        for (const Sent& m : step) {
          m.error.empty() ? out.send_tensor(m.tensor, 1, wire::Channel::Activation)
                          : out.send_error(m.error, 1, wire::Channel::Activation);
        }
        out.wait();
      } else {
        wire::Inbox in(comm, 0, wire::Channel::Activation, static_cast<int>(step.size()),
                       torch::Device(torch::kCPU), &shapes);
        for (size_t i = 0; i < step.size(); ++i) {
          wire::Message got = in.take();
          in.top_up();
          SCOPED_TRACE("message " + std::to_string(i));
          if (!step[i].error.empty()) {
            EXPECT_TRUE(got.failed);
            EXPECT_EQ(got.error, step[i].error);
          } else {
            ASSERT_FALSE(got.failed) << got.error;
            EXPECT_EQ(got.tensor.scalar_type(), step[i].tensor.scalar_type());
            EXPECT_TRUE(torch::equal(got.tensor, step[i].tensor)) << got.tensor << step[i].tensor;
          }
        }
        EXPECT_TRUE(in.done());
      }
      comm->barrier().wait();
    }
    for (int i = 0; i < 6; ++i) remembered[rank].push_back(shapes.expected(i));
  });
  // Both ends expect the same next time: the last step's one tensor, then
  // the step before's (its error text leaves nothing to post).
  const std::vector<std::optional<std::vector<int64_t>>> want = {
      std::vector<int64_t>{1}, std::nullopt, std::vector<int64_t>{5}, std::vector<int64_t>{250, 100},
      std::vector<int64_t>{2, 2}, std::vector<int64_t>{300, 100}};
  for (int end = 0; end < 2; ++end) {
    for (size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE("end " + std::to_string(end) + " message " + std::to_string(i));
      ASSERT_EQ(remembered[end][i].has_value(), want[i].has_value());
      if (want[i]) EXPECT_EQ(remembered[end][i]->sizes, *want[i]);
    }
  }
}

TEST(StageLink, DisabledLinksSendEveryPayloadAfterItsHeader) {
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    wire::LinkShapes shapes(/*enabled=*/false);
    for (int s = 0; s < 2; ++s) {
      const torch::Tensor t = torch::full({3, 2}, s + 1.0);
      if (rank == 0) {
        wire::Outbox out(comm, &shapes);
        out.send_tensor(t, 1, wire::Channel::Gradient);
        out.wait();
      } else {
        wire::Inbox in(comm, 0, wire::Channel::Gradient, 1, torch::Device(torch::kCPU), &shapes);
        wire::Message got = in.take();
        ASSERT_FALSE(got.failed);
        EXPECT_TRUE(torch::equal(got.tensor, t));
      }
      EXPECT_FALSE(shapes.expected(0).has_value());
    }
  });
}

TEST(StageLink, AStepCutShortByACommunicationErrorMakesLaterStepsRefuse) {
  comm::CommOptions options = paisoar::testing::test_options();
  options.timeout = std::chrono::seconds(3);
  std::vector<std::string> first(2), second(2);
  std::promise<void> stage1_done;
  std::shared_future<void> done = stage1_done.get_future().share();
  paisoar::testing::run_ranks(
      2,
      [&](int rank, std::shared_ptr<comm::Communicator> comm) {
        torch::nn::Sequential stage(torch::nn::Linear(4, 4));
        Pipeline pipe(stage, comm, paisoar::testing::pipeline_loss);
        if (rank == 0) {  // never steps, so stage 1's receive times out; stays up until then
          done.wait();
          return;
        }
        const torch::Tensor y = torch::zeros({2}, torch::kInt64);
        try {
          pipe.step(torch::Tensor(), y);
        } catch (const std::exception& e) {
          first[rank] = e.what();
        }
        try {
          pipe.step(torch::Tensor(), y);
        } catch (const c10::Error& e) {
          second[rank] = e.what_without_backtrace();
        }
        stage1_done.set_value();
      },
      options);
  EXPECT_FALSE(first[1].empty()) << "the step without a neighbour did not fail";
  EXPECT_NE(second[1].find("stage 1 of 2"), std::string::npos) << second[1];
  EXPECT_NE(second[1].find("stopped mid-exchange"), std::string::npos) << second[1];
  EXPECT_NE(second[1].find("build a new Pipeline"), std::string::npos) << second[1];
}
