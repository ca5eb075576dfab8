// paisoar-comm-mpi: `paisoar bench comm --peer mpi`, run by mpirun (one
// process per rank). Every rank joins paisoar's Communicator (the rendezvous
// port chosen by rank 0 and told through MPI) and c10d's Gloo beside it, and
// the table of comm_table.h measures paisoar, Open MPI and Gloo alternating in
// the same processes. Open MPI is called as its users call it: in place
// where the call has MPI_IN_PLACE, MPI_SUM then a scaling for an average (MPI
// has no AVG), no bf16 (Open MPI has no bfloat16 datatype). Built only where
// Open MPI is installed; the library itself never links MPI.
#include <mpi.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/version.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/comm_sides.h"

namespace paisoar::bench {
namespace {

class MpiSide : public CommSide {
 public:
  std::string name() const override { return "open mpi"; }
  bool has(const std::string& op) const override { return op != "allreduce_bf16" && op != "allgather"; }
  void allreduce(at::Tensor& t, bool average) override {
    check(MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), count(t), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    if (average) t.div_(size());
  }
  void reduce_scatter(at::Tensor& out, at::Tensor& in) override {
    check(MPI_Reduce_scatter_block(in.data_ptr(), out.data_ptr(), count(out), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
  }
  void allgather_into(at::Tensor& out, at::Tensor& in) override {
    check(MPI_Allgather(in.data_ptr(), count(in), MPI_FLOAT, out.data_ptr(), count(in), MPI_FLOAT, MPI_COMM_WORLD));
  }
  void allgather(std::vector<at::Tensor>&, at::Tensor&) override {}
  void broadcast(at::Tensor& t, int root) override {
    check(MPI_Bcast(t.data_ptr(), count(t), MPI_FLOAT, root, MPI_COMM_WORLD));
  }

 private:
  static int count(const at::Tensor& t) { return static_cast<int>(t.numel()); }
  static int size() {
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }
  static void check(int rc) {
    if (rc != MPI_SUCCESS) throw std::runtime_error("MPI call failed with code " + std::to_string(rc));
  }
};

// A port free on this host now, for paisoar's rendezvous.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("cannot find a free port for paisoar's rendezvous");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

int run(int argc, char** argv) {
  CLI::App app{"paisoar-comm-mpi: paisoar's collectives next to Open MPI's and Gloo's; run it through "
               "`paisoar bench comm --peer mpi`"};
  CommBenchOptions o;
  std::string peer = "mpi";
  app.add_option("--nproc", o.nproc, "ignored: mpirun's -np sets the ranks");
  app.add_option("--peer", peer, "mpi")->check(CLI::IsMember({"mpi"}));
  add_comm_bench_options(app, o);
  CLI11_PARSE(app, argc, argv);

  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int port = rank == 0 ? free_port() : 0;
  MPI_Bcast(&port, 1, MPI_INT, 0, MPI_COMM_WORLD);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  auto comm = comm::Communicator::from_env();  // rank and size from Open MPI's variables

  std::vector<std::unique_ptr<CommSide>> sides;
  sides.push_back(std::make_unique<PaisoarSide>(*comm));
  sides.push_back(std::make_unique<MpiSide>());
  sides.push_back(std::make_unique<GlooSide>(*comm));
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(library, &length);
  std::string lib(library, static_cast<size_t>(length));
  lib = lib.substr(0, lib.find(','));
  const std::string title = "paisoar bench comm --peer mpi: " + std::to_string(size) + " ranks; paisoar on " +
                            comm->backend_name() + ", " + lib + " (MPI " + std::to_string(major) + "." +
                            std::to_string(minor) + ", shared-memory transport), c10d's Gloo over 127.0.0.1 "
                            "(LibTorch " + TORCH_VERSION + ")";
  const int rc = run_comm_table(o, ranks_of(*comm), sides, title);
  comm->barrier().wait();
  return rc;
}

}  // namespace
}  // namespace paisoar::bench

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 1;
  try {
    rc = paisoar::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paisoar-comm-mpi: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}
