// A rank program for the rendezvous tests: joins the job through
// Communicator::from_env (under `paisoar launch`: the launcher's store, with
// PAISOAR_JOB_TOKEN), allreduces rank+1, waits for the file named by argv[1]
// (60 s at most), and allreduces again. Prints "joined sum=S" and "done
// sum=S"; on an error prints "error: <what>" to stderr and exits 1.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

#include "paisoar/comm/communicator.h"

namespace {

float allreduced_rank_sum(paisoar::comm::Communicator& comm) {
  torch::Tensor t = torch::full({4}, static_cast<float>(comm.rank() + 1));
  comm.allreduce(t).wait();
  return t[0].item<float>();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: rendezvous_probe GO_FILE\n");
    return 2;
  }
  try {
    auto comm = paisoar::comm::Communicator::from_env();
    std::printf("joined sum=%g\n", allreduced_rank_sum(*comm));
    std::fflush(stdout);
    for (int i = 0; i < 6000 && ::access(argv[1], F_OK) != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::printf("done sum=%g\n", allreduced_rank_sum(*comm));
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
