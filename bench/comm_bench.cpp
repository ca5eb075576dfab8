// `paisoar bench comm`: paisoar's collectives next to raw c10d Gloo on the
// same ranks in the same run (bench/comm_table.h), 4 KiB to 256 MiB, and
// with `--peer mpi` next to Open MPI too: that runs bench/comm_mpi_main.cpp
// (paisoar-comm-mpi, built where Open MPI is installed) under mpirun.
// --repeat N launches it N times and reports each row's spread
// (bench/comm_spread.h). paisoar runs on what Backend::Auto chose (shared memory for ranks on one
// host; PAISOAR_COMM_BACKEND=gloo forces Gloo).
#include <torch/version.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "apps/paisoar-core/commands.h"
#include "bench/child_process.h"
#include "bench/comm_spread.h"
#include "bench/comm_sides.h"
#include "paisoar/comm.h"

namespace paisoar::app {
namespace {

struct CommCommandOptions {
  bench::CommBenchOptions table;
  std::string peer = "gloo";
  int launches = 1;  // --repeat
};

// --repeat N: the benchmark launched N times (bench/comm_spread.h); each
// launch's JSON is kept beside the combined one as <json>.launch<k>.json.
int run_launches(const CommCommandOptions& o, int argc, char** argv) {
  std::vector<std::string> args;
  int first = 1;  // from `bench` on
  while (first < argc && std::string(argv[first]) != "bench") ++first;
  for (int i = first; i < argc; ++i) args.emplace_back(argv[i]);
  std::vector<nlohmann::json> results;
  for (int k = 1; k <= o.launches; ++k) {
    const std::string json = o.table.json + ".launch" + std::to_string(k) + ".json";
    std::vector<std::string> child = {self_executable()};
    for (auto& a : bench::launch_arguments(args, json)) child.push_back(a);
    const bench::ChildResult r = bench::run_child(child);
    std::fputs(r.out.c_str(), stdout);
    if (!r.status.success()) {
      std::fprintf(stderr, "paisoar bench comm: launch %d of %d %s:\n%s", k, o.launches, r.status.describe().c_str(),
                   r.err.c_str());
      return 1;
    }
    std::ifstream in(json);
    results.push_back(nlohmann::json::parse(in));
    std::printf("launch %d of %d done\n", k, o.launches);
    std::fflush(stdout);
  }
  const nlohmann::json combined = bench::combine_launches(results);
  std::printf("\n%s", bench::spread_table(combined).c_str());
  std::ofstream(o.table.json) << combined.dump(2) << "\n";
  std::printf("wrote %s\n", o.table.json.c_str());
  return 0;
}

// `mpirun -np N paisoar-comm-mpi <the same options>`; returns only on failure.
int run_under_mpirun(const CommCommandOptions& o, int argc, char** argv) {
  const std::string exe = self_executable();
  const std::string program = exe.substr(0, exe.rfind('/') + 1) + "paisoar-comm-mpi";
  if (access(program.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "paisoar bench comm: --peer mpi needs %s, which is built only where Open MPI is "
                 "installed: run scripts/setup.sh (it installs openmpi-bin and libopenmpi-dev) and build again\n",
                 program.c_str());
    return 2;
  }
  // Open MPI's shared-memory transport; a rank per core, bound to it, while
  // there are enough cores (unbound, the scheduler at times put both ranks
  // of a 2-core machine on one core for seconds, for both sides alike);
  // more ranks than cores allowed, unbound (Open MPI's ranks then yield).
  const bool bind = o.table.nproc <= static_cast<int>(std::thread::hardware_concurrency());
  std::vector<std::string> args = {"mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", bind ? "core" : "none",
                                   "--mca",  "btl",                 "self,vader",     "-np",       std::to_string(o.table.nproc),
                                   program};
  int first = 1;  // the options after `bench comm`
  while (first < argc && std::string(argv[first - 1]) != "comm") ++first;
  for (int i = first; i < argc; ++i) args.emplace_back(argv[i]);
  std::vector<char*> raw;
  for (auto& a : args) raw.push_back(a.data());
  raw.push_back(nullptr);
  execvp("mpirun", raw.data());
  std::fprintf(stderr, "paisoar bench comm: could not run mpirun (%s): install openmpi-bin (scripts/setup.sh does)\n",
               std::strerror(errno));
  return 2;
}

int run_comm_bench(const CommCommandOptions& o, int argc, char** argv) {
  if (o.launches > 1) return run_launches(o, argc, argv);
  if (o.peer == "mpi") return run_under_mpirun(o, argc, argv);
  relaunch_unless_launched(o.table.nproc, argc, argv);
  auto comm = comm::Communicator::from_env();
  std::vector<std::unique_ptr<bench::CommSide>> sides;
  sides.push_back(std::make_unique<bench::PaisoarSide>(*comm));
  sides.push_back(std::make_unique<bench::GlooSide>(*comm));
  const std::string title = "paisoar bench comm: " + std::to_string(comm->size()) + " ranks; paisoar on " +
                            comm->backend_name() + ", c10d's Gloo called directly over " +
                            comm::rank_info_from_env().master_addr + " (LibTorch " + TORCH_VERSION + ")";
  return bench::run_comm_table(o.table, bench::ranks_of(*comm), sides, title);
}

}  // namespace

Command add_bench_comm_command(CLI::App& bench) {
  auto o = std::make_shared<CommCommandOptions>();
  auto* cmd = bench.add_subcommand("comm", "collectives: paisoar vs raw c10d Gloo (and Open MPI with --peer mpi)");
  cmd->add_option("--nproc", o->table.nproc, "ranks to start when not launched")->check(CLI::Range(2, 64));
  cmd->add_option("--peer", o->peer, "gloo: paisoar and c10d's Gloo; mpi: Open MPI's too, under mpirun")
      ->check(CLI::IsMember({"gloo", "mpi"}));
  cmd->add_option("--repeat", o->launches,
                  "launch the whole benchmark this many times and report each row's spread over the launches "
                  "(the worst launch's ratio is the one to hold a target to)")
      ->check(CLI::Range(1, 20));
  bench::add_comm_bench_options(*cmd, o->table);
  return [o](int argc, char** argv) { return run_comm_bench(*o, argc, argv); };
}

}  // namespace paisoar::app
