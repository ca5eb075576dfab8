// The in-process c10d backend behind Backend::Threads: the ranks of a group
// are threads of this process, and a collective is done by the last rank to
// join it, reading and writing every rank's tensors directly (no sockets, no
// copies through a transport). For logic tests and single-process multi-rank
// runs; results are exact and in rank order (a sum adds rank 0, 1, 2, ...).
// A rank whose backend is destroyed (its thread failed or finished) leaves
// the group: what it never joined fails at once on its peers, as a closed
// connection does under Gloo.
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>
#include <unistd.h>

#include "src/comm/backend.h"
#include "src/comm/combine.h"

namespace paisoar::comm::detail {
namespace {

// One collective, or one send matched with its recv. Guarded by Shared::mutex.
struct Op {
  bool done = false;
  std::string error;                     // non-empty: failed
  std::function<std::string()> waiting;  // who it still waits for, for timeout messages
  bool finished() const { return done || !error.empty(); }
};

struct Collective {
  std::shared_ptr<Op> op = std::make_shared<Op>();
  std::vector<std::string> signature;  // per rank: kind, dtype and numel, "" until it joins
  std::vector<std::vector<at::Tensor>> tensors;  // per rank
  std::vector<std::vector<at::Tensor>> outputs;  // per rank (allgather)
  int joined = 0;
};

struct Message {
  at::Tensor tensor;
  std::shared_ptr<Op> op;
};

// What the ranks of one group share. Owned jointly by their backends and works.
struct Shared {
  explicit Shared(int n) : left(n, false) {}
  std::mutex mutex;
  std::condition_variable changed;
  std::map<int64_t, std::shared_ptr<Collective>> collectives;  // by issue number, until complete
  using Channel = std::tuple<int, int, int>;  // src, dst, tag
  std::map<Channel, std::deque<Message>> sends, recvs;
  std::vector<bool> left;  // ranks whose backend was destroyed

  void finish(Op& op, std::string error = "") {
    if (error.empty()) op.done = true;
    else op.error = std::move(error);
    changed.notify_all();
  }
};

std::string left_message(int rank) {
  return "rank " + std::to_string(rank) +
         " left the group (its thread failed or finished): connection closed by peer";
}

// Every rank's tensors are reachable here, so the last rank to join combines them.
void run_collective(const std::string& kind, const ::c10d::ReduceOp& reduce, int root, Collective& c) {
  const int size = static_cast<int>(c.tensors.size());
  if (kind == "broadcast") {
    for (int r = 0; r < size; ++r) {
      if (r != root) c.tensors[r][0].copy_(c.tensors[root][0]);
    }
  } else if (kind == "allgather") {
    for (int r = 0; r < size; ++r) {
      for (int i = 0; i < size; ++i) c.outputs[r][i].copy_(c.tensors[i][0]);
    }
  } else if (kind == "allreduce") {
    at::Tensor acc = c.tensors[0][0].clone();
    for (int r = 1; r < size; ++r) {
      combine_into(acc, c.tensors[r][0], reduce, "threads");
    }
    if (reduce.op_ == ::c10d::ReduceOp::AVG) {
      TORCH_CHECK(at::isFloatingType(acc.scalar_type()), "threads backend: AVG takes floating tensors, not ",
                  acc.scalar_type());
      acc.div_(size);
    }
    for (int r = 0; r < size; ++r) c.tensors[r][0].copy_(acc);
  }  // barrier: joining is all it does
}

class ThreadWork : public ::c10d::Work {
 public:
  ThreadWork(std::shared_ptr<Shared> shared, std::shared_ptr<Op> op, std::chrono::milliseconds timeout)
      : shared_(std::move(shared)), op_(std::move(op)), timeout_(timeout) {}

  bool isCompleted() override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    return op_->finished();
  }

  bool wait(std::chrono::milliseconds timeout) override {
    const auto limit = timeout.count() == 0 ? timeout_ : timeout;  // 0: c10d's kNoTimeout, the group's
    std::unique_lock<std::mutex> lock(shared_->mutex);
    if (!shared_->changed.wait_for(lock, limit, [&] { return op_->finished(); })) {
      C10_THROW_ERROR(DistBackendError, "threads backend: timed out after " + std::to_string(limit.count()) +
                                            " ms waiting for " + op_->waiting());
    }
    if (!op_->error.empty()) C10_THROW_ERROR(DistBackendError, "threads backend: " + op_->error);
    return true;
  }

 private:
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<Op> op_;
  std::chrono::milliseconds timeout_;
};

class ThreadBackend : public ::c10d::Backend {
 public:
  ThreadBackend(std::shared_ptr<Shared> shared, int rank, int size, std::chrono::milliseconds timeout)
      : ::c10d::Backend(rank, size), shared_(std::move(shared)), timeout_(timeout) {}

  ~ThreadBackend() override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->left[rank_] = true;
    for (auto& [seq, c] : shared_->collectives) {
      if (c->signature[rank_].empty() && !c->op->finished()) shared_->finish(*c->op, left_message(rank_));
    }
    fail_waiting_on_me(shared_->recvs, /*src*/ 0);  // receives from this rank
    fail_waiting_on_me(shared_->sends, /*dst*/ 1);  // sends to this rank
  }

  const std::string getBackendName() const override { return "paisoar-threads"; }

  c10::intrusive_ptr<::c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                             const ::c10d::AllreduceOptions& opts) override {
    return join("allreduce", tensors, {}, opts.reduceOp, 0);
  }
  c10::intrusive_ptr<::c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                             const ::c10d::BroadcastOptions& opts) override {
    return join("broadcast", tensors, {}, ::c10d::ReduceOp(), static_cast<int>(opts.rootRank));
  }
  c10::intrusive_ptr<::c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                             std::vector<at::Tensor>& inputs,
                                             const ::c10d::AllgatherOptions& /*opts*/) override {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                "threads backend: allgather takes one list of ", size_, " outputs");
    return join("allgather", inputs, outputs[0], ::c10d::ReduceOp(), 0);
  }
  c10::intrusive_ptr<::c10d::Work> barrier(const ::c10d::BarrierOptions& /*opts*/) override {
    std::vector<at::Tensor> none{at::empty({0})};
    return join("barrier", none, {}, ::c10d::ReduceOp(), 0);
  }
  c10::intrusive_ptr<::c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override {
    return post(tensors, rank_, dst, tag, /*sending=*/true);
  }
  c10::intrusive_ptr<::c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override {
    return post(tensors, src, rank_, tag, /*sending=*/false);
  }

 private:
  c10::intrusive_ptr<::c10d::Work> join(const std::string& kind, const std::vector<at::Tensor>& tensors,
                                        std::vector<at::Tensor> outputs, const ::c10d::ReduceOp& reduce,
                                        int root) {
    TORCH_CHECK(tensors.size() == 1, "threads backend: ", kind, " takes one tensor, got ", tensors.size());
    const int64_t seq = issued_++;
    const std::string signature = kind + " of " + std::to_string(tensors[0].numel()) + " " +
                                  c10::toString(tensors[0].scalar_type()) +
                                  (kind == "broadcast" ? " from rank " + std::to_string(root) : "");
    std::unique_lock<std::mutex> lock(shared_->mutex);
    auto [it, created] = shared_->collectives.try_emplace(seq);
    if (created) {
      it->second = std::make_shared<Collective>();
      Collective& fresh = *it->second;
      fresh.signature.assign(size_, "");
      fresh.tensors.resize(size_);
      fresh.outputs.resize(size_);
      // Called under the mutex; the collective may be gone by then.
      fresh.op->waiting = [weak = std::weak_ptr<Collective>(it->second), seq, kind] {
        std::string missing;
        if (auto c = weak.lock()) {
          for (size_t r = 0; r < c->signature.size(); ++r) {
            if (c->signature[r].empty()) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
          }
        }
        return "rank(s) " + missing + " to join " + kind + " #" + std::to_string(seq);
      };
    }
    Collective& c = *it->second;
    c.signature[rank_] = signature;
    c.tensors[rank_] = tensors;
    c.outputs[rank_] = std::move(outputs);
    auto work = c10::make_intrusive<ThreadWork>(shared_, c.op, timeout_);
    if (c.op->finished()) return work;  // failed before this rank came
    for (int r = 0; r < size_; ++r) {
      if (!c.signature[r].empty() && c.signature[r] != signature) {
        shared_->finish(*c.op, "size mismatch in collective #" + std::to_string(seq) + ": rank " +
                                   std::to_string(r) + " issued " + c.signature[r] + ", rank " +
                                   std::to_string(rank_) + " issued " + signature);
        return work;
      }
      if (c.signature[r].empty() && shared_->left[r]) {
        shared_->finish(*c.op, left_message(r));
        return work;
      }
    }
    if (++c.joined < size_) return work;
    // Last to join: every other rank has posted its tensors and waits, so they
    // are read and written outside the lock.
    std::shared_ptr<Collective> mine = it->second;
    shared_->collectives.erase(it);
    lock.unlock();
    std::string error;
    try {
      run_collective(kind, reduce, root, *mine);
    } catch (const c10::Error& e) {
      error = e.what_without_backtrace();
    }
    lock.lock();
    shared_->finish(*mine->op, error);
    return work;
  }

  c10::intrusive_ptr<::c10d::Work> post(std::vector<at::Tensor>& tensors, int src, int dst, int tag,
                                        bool sending) {
    TORCH_CHECK(tensors.size() == 1, "threads backend: send/recv take one tensor, got ", tensors.size());
    const int peer = sending ? dst : src;
    TORCH_CHECK(peer >= 0 && peer < size_ && peer != rank_, "threads backend: peer ", peer,
                " is not another rank of this group of ", size_);
    auto op = std::make_shared<Op>();
    op->waiting = [peer, sending] {
      return "rank " + std::to_string(peer) + (sending ? " to receive" : " to send");
    };
    auto work = c10::make_intrusive<ThreadWork>(shared_, op, timeout_);
    std::unique_lock<std::mutex> lock(shared_->mutex);
    const Shared::Channel channel{src, dst, tag};
    auto& matching = sending ? shared_->recvs[channel] : shared_->sends[channel];
    if (matching.empty()) {
      if (shared_->left[peer]) {
        shared_->finish(*op, left_message(peer));
      } else {
        (sending ? shared_->sends : shared_->recvs)[channel].push_back({tensors[0], op});
      }
      return work;
    }
    Message other = std::move(matching.front());
    matching.pop_front();
    lock.unlock();
    const at::Tensor& from = sending ? tensors[0] : other.tensor;
    const at::Tensor& to = sending ? other.tensor : tensors[0];
    std::string error;
    if (from.nbytes() != to.nbytes()) {
      error = "size mismatch: rank " + std::to_string(src) + " sent " + std::to_string(from.nbytes()) +
              " bytes (nbytes) with tag " + std::to_string(tag) + ", rank " + std::to_string(dst) + " expects " +
              std::to_string(to.nbytes());
    } else {
      to.view({-1}).copy_(from.view({-1}));
    }
    lock.lock();
    shared_->finish(*op, error);
    shared_->finish(*other.op, error);
    return work;
  }

  // Fails the messages that wait for this rank, which left: those whose
  // channel has this rank at `end` (0: the sender, 1: the receiver).
  void fail_waiting_on_me(std::map<Shared::Channel, std::deque<Message>>& channels, int end) {
    for (auto& [channel, queue] : channels) {
      if ((end == 0 ? std::get<0>(channel) : std::get<1>(channel)) != rank_) continue;
      for (auto& m : queue) shared_->finish(*m.op, left_message(rank_));
      queue.clear();
    }
  }

  std::shared_ptr<Shared> shared_;
  std::chrono::milliseconds timeout_;
  int64_t issued_ = 0;  // collectives this rank issued: matches them across ranks by order
};

// Groups being formed, by the id rank 0 published in the store; an entry
// lives until every rank has attached.
struct Registry {
  std::mutex mutex;
  std::map<std::string, std::pair<std::shared_ptr<Shared>, int>> forming;  // shared, ranks attached
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

C10dGroupPtr make_thread_group(const Store& store, int rank, int size, std::chrono::milliseconds timeout) {
  static std::atomic<int64_t> next_id{0};
  auto& reg = registry();
  std::string id;
  if (rank == 0) {
    id = std::to_string(::getpid()) + "." + std::to_string(next_id++);
    std::lock_guard<std::mutex> lock(reg.mutex);
    reg.forming[id] = {std::make_shared<Shared>(size), 0};
  }
  if (rank == 0) store.set("threads/id", id);
  else id = store.get("threads/id");
  std::shared_ptr<Shared> shared;
  {
    std::lock_guard<std::mutex> lock(reg.mutex);
    auto it = reg.forming.find(id);
    TORCH_CHECK_VALUE(it != reg.forming.end(), "Communicator: backend 'threads' joins ranks that are threads of one "
                      "process, and rank 0 of this group is in another (group id ", id,
                      "); use backend 'gloo' (or 'auto') across processes");
    shared = it->second.first;
    if (++it->second.second == size) reg.forming.erase(it);
  }
  return c10::make_intrusive<ThreadBackend>(std::move(shared), rank, size, timeout);
}

}  // namespace paisoar::comm::detail
