// A user program built against an installed paisoar: every rank joins the job
// (`paisoar launch --nproc_per_node 2 -- ./allreduce_example`) and averages a tensor.
#include <paisoar/paisoar.h>

#include <iostream>

int main() {
  auto comm = paisoar::comm::Communicator::from_env();
  auto t = torch::full({4}, static_cast<float>(comm->rank()));
  comm->allreduce(t, paisoar::comm::ReduceOp::Avg).wait();
  float want = (comm->size() - 1) / 2.0f;
  bool ok = t.eq(want).all().item<bool>();
  std::cout << "rank " << comm->rank() << " of " << comm->size() << " (paisoar " << PAISOAR_VERSION
            << "): average " << t[0].item<float>() << (ok ? " OK" : " WRONG") << std::endl;
  return ok ? 0 : 1;
}
