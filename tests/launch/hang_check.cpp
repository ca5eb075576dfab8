// A rank program for launch_hang_test.cpp under `paisoar launch`: control
// flow that differs between ranks, which a hang diagnosis must name.
//   hang_check skip: 2 ranks; five allreduces of 1024 floats on the world, of
//     which rank 1 skips the fourth, then one on a second group of the same
//     ranks. Rank 1 reaches that one while rank 0 waits in the world's fifth:
//     each waits for the other in another group, for good. Prints "rank R
//     (pid P) issues N collectives on the world" first.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "paisoar/comm/communicator.h"

int main(int argc, char** argv) {
  using paisoar::comm::Communicator;
  if (argc != 2 || std::string(argv[1]) != "skip") {
    std::fprintf(stderr, "usage: hang_check skip\n");
    return 2;
  }
  paisoar::comm::CommOptions options;
  options.timeout = std::chrono::minutes(10);  // the launcher's diagnosis must come first
  auto world = Communicator::from_env(options);
  auto side = world->new_group({0, 1});
  const int rank = world->rank();
  std::printf("rank %d (pid %d) issues %d collectives on the world\n", rank, static_cast<int>(::getpid()),
              rank == 1 ? 4 : 5);
  std::fflush(stdout);
  for (int i = 1; i <= 5; ++i) {
    if (rank == 1 && i == 4) continue;  // the branch only rank 1 takes
    auto t = torch::ones({1024});
    world->allreduce(t).wait();
  }
  auto t = torch::ones({16});
  side->allreduce(t).wait();
  return 0;
}
