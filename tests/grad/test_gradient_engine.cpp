// The GradientEngine against a recording sink on 2 thread ranks: which sink
// calls a backward makes (groups, local passes, the end), and the error rules
// every owner inherits: a rank's error raised on every rank with one message,
// a missing gradient an error everywhere unless allowed.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>
#include <set>

#include "paisoar/grad.h"
#include "tests/support/thread_ranks.h"

using namespace paisoar;

namespace {

// Records what the engine asked; gradients stay where autograd put them.
struct RecordingSink : grad::GradientSink {
  std::vector<std::string> calls;
  int fail_adopt_of = -1;  // adopt() of this parameter throws
  std::set<size_t> unused;
  bool adopt(size_t param) override {
    if (static_cast<int>(param) == fail_adopt_of) throw std::runtime_error("Sink: cannot adopt the gradient");
    return false;
  }
  void group_ready(size_t g) override { calls.push_back("ready " + std::to_string(g)); }
  void local_group_done(size_t g) override { calls.push_back("local " + std::to_string(g)); }
  void launch_remaining() override { calls.push_back("launch"); }
  void wait_all() override { calls.push_back("wait"); }
  void unused_everywhere(size_t param, bool) override { unused.insert(param); }
  void synchronised(const std::vector<size_t>& arrival) override {
    calls.push_back("synchronised " + std::to_string(arrival.size()));
  }
  void end_backward(bool synchronised) noexcept override {
    calls.push_back(synchronised ? "end sync" : "end local");
  }
};

struct Params {
  torch::Tensor a = torch::ones({3}, torch::requires_grad());
  torch::Tensor b = torch::ones({2}, torch::requires_grad());
  torch::Tensor c = torch::ones({4}, torch::requires_grad());
  std::vector<grad::NamedParameter> named() const { return {{"a", a}, {"b", b}, {"c", c}}; }
  torch::Tensor loss(bool use_c = true) const {
    auto l = a.sum() * 2 + b.sum();
    return use_c ? l + c.sum() : l;
  }
};

grad::EngineOptions options(bool find_unused = false) {
  grad::EngineOptions o;
  o.component = "TestOwner";
  o.find_unused_parameters = find_unused;
  o.find_unused_option = "TestOptions::find_unused";
  return o;
}

std::vector<std::string> messages_of(const std::function<void(int, std::shared_ptr<comm::Communicator>)>& fn) {
  return paisoar::testing::rank_errors(2, fn);
}

TEST(GradientEngine, ASynchronisedBackwardReadiesEveryGroupThenLaunchesWaitsAndAgrees) {
  paisoar::testing::run_ranks(2, [](int, std::shared_ptr<comm::Communicator> comm) {
    Params p;
    RecordingSink sink;
    grad::GradientEngine engine(p.named(), {{0, 1}, {2}}, sink, comm, options());
    p.loss().backward();
    std::multiset<std::string> readied(sink.calls.begin(), sink.calls.begin() + 2);
    EXPECT_EQ(readied, (std::multiset<std::string>{"ready 0", "ready 1"}));
    EXPECT_EQ(std::vector<std::string>(sink.calls.begin() + 2, sink.calls.end()),
              (std::vector<std::string>{"launch", "wait", "synchronised 3", "end sync"}));
    EXPECT_GE(engine.last_stats().agreement_bytes, 4 * (3 + 2));  // 3 parameters + 2 rank flags, int32
  });
}

TEST(GradientEngine, LocalPassesOnlyAccumulateAndCountTowardsTheNextSynchronisedBackward) {
  paisoar::testing::run_ranks(2, [](int, std::shared_ptr<comm::Communicator> comm) {
    Params p;
    RecordingSink sink;
    grad::GradientEngine engine(p.named(), {{0, 1}, {2}}, sink, comm, options());
    {
      grad::NoSync<grad::GradientEngine> no_sync(engine);
      p.loss(/*use_c=*/true).backward();  // c gets its gradient only here
    }
    std::multiset<std::string> local(sink.calls.begin(), sink.calls.end());
    EXPECT_EQ(local, (std::multiset<std::string>{"local 0", "local 1", "end local"}));
    sink.calls.clear();
    p.loss(/*use_c=*/false).backward();  // c counts as used: its local gradient is averaged
    EXPECT_EQ(sink.calls.back(), "end sync");
    EXPECT_EQ(sink.calls[sink.calls.size() - 2], "synchronised 2");
    EXPECT_TRUE(engine.sync());
  });
}

TEST(GradientEngine, OneRanksErrorIsRaisedOnEveryRankWithTheSameMessage) {
  auto messages = messages_of([](int rank, std::shared_ptr<comm::Communicator> comm) {
    Params p;
    RecordingSink sink;
    if (rank == 1) sink.fail_adopt_of = 1;
    grad::GradientEngine engine(p.named(), {{0, 1}, {2}}, sink, comm, options());
    p.loss().backward();
  });
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[0].find("Sink: cannot adopt the gradient [rank 1 of 2; every rank stops"), std::string::npos)
      << messages[0];
}

TEST(GradientEngine, AMissingGradientIsAnErrorOnEveryRankUnlessAllowed) {
  auto messages = messages_of([](int rank, std::shared_ptr<comm::Communicator> comm) {
    Params p;
    RecordingSink sink;
    grad::GradientEngine engine(p.named(), {{0, 1}, {2}}, sink, comm, options());
    p.loss(/*use_c=*/rank == 0).backward();
  });
  for (const auto& m : messages) {
    EXPECT_NE(m.find("TestOwner: parameter 'c' received no gradient in this backward on 1 of 2 ranks"),
              std::string::npos) << m;
    EXPECT_NE(m.find("set TestOptions::find_unused = true"), std::string::npos) << m;
  }
  paisoar::testing::run_ranks(2, [](int rank, std::shared_ptr<comm::Communicator> comm) {
    Params p;
    RecordingSink sink;
    grad::GradientEngine engine(p.named(), {{0, 1}, {2}}, sink, comm, options(/*find_unused=*/true));
    p.loss(/*use_c=*/false).backward();  // nowhere: the sink hears it
    EXPECT_EQ(sink.unused, (std::set<size_t>{2}));
    sink.unused.clear();
    p.loss(/*use_c=*/rank == 0).backward();  // on one rank: counts as zero there, not unused
    EXPECT_TRUE(sink.unused.empty());
  });
}

TEST(GradientEngine, BadGroupsNameTheParameter) {
  paisoar::testing::run_ranks(1, [](int, std::shared_ptr<comm::Communicator> comm) {
    Params p;
    RecordingSink sink;
    try {
      grad::GradientEngine engine(p.named(), {{0, 1}}, sink, comm, options());
      FAIL() << "no error";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("TestOwner: parameter 'c' is in no group"), std::string::npos);
    }
  });
}

}  // namespace
