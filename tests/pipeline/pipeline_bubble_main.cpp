// Standalone measurement (not a test, not in CMake): the executor's bubble
// against (P-1)/(M+P-1). Stages are "ideal devices": each layer sleeps a fixed
// time in forward and twice that in backward, so P rank threads do not compete
// for this machine's cores and what is measured is the schedule plus the
// executor's own overhead. Per step: bubble = 1 - sum(compute) / (P * slowest
// step). Prints one row per (schedule, M), the median over steps, with the
// ideal step (M+P-1) x (forward + backward) and the share of stage-time spent
// blocked in receives (the rest of the bubble: waiting at the end of the step
// for the other stages to drain, sends and polls).
//   usage: pipeline_bubble [P=4] [forward_ms=4] [steps=5]
//   build (from the repository root, after a build of libpaisoar in build/), one line:
//   g++ -std=c++17 -O2 -DUSE_C10D_GLOO -Iinclude -Ibuild/include -I.
//     -isystem /usr/include/torch/csrc/api/include tests/pipeline/pipeline_bubble_main.cpp
//     -Lbuild/lib -Wl,-rpath,$PWD/build/lib -lpaisoar -ltorch -ltorch_cpu -lc10 -pthread -o pipeline_bubble
// Figures and the machine they came from: docs/PIPELINE.md, "Measured bubble".
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "paisoar/pipeline.h"
#include "tests/support/thread_ranks.h"

namespace pp = paisoar::pipeline;

namespace {

double g_forward_ms = 4;

struct Sleep : torch::autograd::Function<Sleep> {
  static torch::Tensor forward(torch::autograd::AutogradContext*, torch::Tensor x) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(g_forward_ms));
    return x.clone();
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext*,
                                               torch::autograd::tensor_list grads) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(2 * g_forward_ms));
    return {grads[0]};
  }
};

struct SleepLayerImpl : torch::nn::Module {
  SleepLayerImpl() { w = register_parameter("w", torch::ones({1})); }
  torch::Tensor forward(torch::Tensor x) { return Sleep::apply(x * w); }
  torch::Tensor w;
};
TORCH_MODULE(SleepLayer);

}  // namespace

int main(int argc, char** argv) {
  const int stages = argc > 1 ? std::atoi(argv[1]) : 4;
  g_forward_ms = argc > 2 ? std::atof(argv[2]) : 4;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 5;
  torch::set_num_threads(1);
  std::printf("P=%d, one layer per stage, forward %.1f ms + backward %.1f ms per micro-batch, %d steps\n",
              stages, g_forward_ms, 2 * g_forward_ms, steps);
  std::printf("%-6s %4s %10s %10s %10s %10s %10s\n", "sched", "M", "formula", "measured", "step_ms", "ideal_ms",
              "recv_wait");
  for (pp::Schedule schedule : {pp::Schedule::GPipe, pp::Schedule::OneFOneB}) {
    for (int m : {1, 2, 4, 8, 16, 32}) {
      std::vector<double> bubbles, step_ms, waits;
      std::mutex mutex;
      std::vector<pp::PipelineStepStats> stats(stages);
      std::vector<std::vector<pp::PipelineStepStats>> per_step(steps, std::vector<pp::PipelineStepStats>(stages));
      paisoar::testing::run_ranks(stages, [&](int rank, std::shared_ptr<paisoar::comm::Communicator> comm) {
        torch::nn::Sequential stage(SleepLayer{});
        pp::PipelineOptions options;
        options.micro_batches = m;
        options.schedule = schedule;
        pp::Pipeline pipe(stage, comm, [](const torch::Tensor& out, const torch::Tensor&) { return out.sum(); },
                          options);
        const torch::Tensor x = torch::ones({m, 4});
        for (int s = 0; s < steps + 1; ++s) {  // the first step warms up
          comm->barrier().wait();
          pipe.step(x, x);
          if (s > 0) per_step[s - 1][rank] = pipe.last_step();
        }
      });
      for (const auto& ranks : per_step) {
        double busy = 0, slowest = 0, wait = 0;
        for (const auto& st : ranks) {
          busy += st.compute_s;
          wait += st.recv_wait_s;
          slowest = std::max(slowest, st.step_s);
        }
        waits.push_back(wait / (stages * slowest));
        bubbles.push_back(1 - busy / (stages * slowest));
        step_ms.push_back(slowest * 1e3);
      }
      std::sort(bubbles.begin(), bubbles.end());
      std::sort(step_ms.begin(), step_ms.end());
      std::sort(waits.begin(), waits.end());
      std::printf("%-6s %4d %10.3f %10.3f %10.1f %10.1f %10.3f\n", pp::to_string(schedule), m,
                  static_cast<double>(stages - 1) / (m + stages - 1), bubbles[steps / 2], step_ms[steps / 2],
                  3 * g_forward_ms * (m + stages - 1), waits[steps / 2]);
    }
  }
  return 0;
}
