// Plain types shared by the communication layer: reduce operations, backends,
// options, and the error every failed collective raises. No c10d types leak here.
#pragma once

#include <c10/util/Exception.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace paisoar::comm {

class FlightRecorder;  // src/comm/flight_recorder.h

enum class ReduceOp { Sum, Avg, Min, Max, Product };

// Auto: for CPU tensors, Shm when every rank of the group shares this host's
// memory (same host, same /dev/shm, same user; checked through the store),
// else Gloo; NCCL for CUDA tensors in a CUDA build.
// Threads: every rank is a thread of this process over an in-process store
// (Store::hash()); collectives read and write the ranks' tensors directly, on
// any device, with no sockets: for logic tests and single-process multi-rank
// runs. Results are exact and summed in rank order.
// Shm: the ranks are on one host (processes or threads) and exchange CPU
// tensors through a /dev/shm segment per group (src/comm/backend_shm.cpp),
// with no sockets on the data path.
enum class Backend { Auto, Gloo, Nccl, Threads, Shm };

const char* to_string(ReduceOp op);
const char* to_string(Backend backend);
// The backend a user may name (auto, gloo, nccl, shm); throws c10::ValueError
// naming `what` (the setting it came from) and the choices otherwise.
Backend backend_named(const std::string& name, const std::string& what);

struct CommOptions {
  Backend backend = Backend::Auto;
  // Every collective fails after this long instead of hanging (torch's default is 30 min).
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  // Before each collective, check that every rank issues the same operation on
  // tensors of the same dtype and shape (one small allgather per collective).
  // Turns a mismatch (which Gloo reports as a hang or a cryptic error) into an
  // error naming both ranks' arguments. (Communicator::from_env: also PAISOAR_CHECK_COLLECTIVES=1.)
  bool check_collectives = false;
  // Address of the local network interface Gloo binds to. Empty: the address the
  // route to the master uses (127.0.0.1 for a loopback master); socket_ifname wins.
  std::string bind_address;
  // The network interface Gloo binds to by name ("eth0"); empty: bind_address.
  // (Communicator::from_env: GLOO_SOCKET_IFNAME.)
  std::string socket_ifname;
  // reduce_scatter and allgather_into send each peer's part as messages of at most
  // this many bytes, reducing segment k while k+1 travels (1 MiB measured best on
  // loopback, see docs/BENCHMARKS.md). At least 1024. (Communicator::from_env: PAISOAR_SEGMENT_BYTES.)
  int64_t segment_bytes = 1 << 20;
  // Where this rank records its collectives and what it is doing, for the
  // launcher's hang diagnosis (docs/DIAGNOSIS.md); null: nowhere.
  // (Communicator::from_env: the file PAISOAR_FLIGHT_RECORD names.)
  std::shared_ptr<FlightRecorder> flight_recorder;
};

// Thrown by Work::wait() and by collectives that fail at submission. The message
// names the operation, the group, this rank, and the likely cause.
class CommError : public c10::DistBackendError {
 public:
  enum class Cause { PeerDied, Timeout, Mismatch, InvalidArgument, Other };
  CommError(const std::string& message, Cause cause)
      : c10::DistBackendError(message), cause_(cause) {}
  Cause cause() const noexcept { return cause_; }

 private:
  Cause cause_;
};

}  // namespace paisoar::comm
