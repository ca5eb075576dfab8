// The c10d backend behind Backend::Shm: ranks on one host exchange tensors
// through a ShmSegment instead of sockets. Collectives run in issue order on
// one Lane per group: on the lane's thread, or on the caller's own thread
// when it waits for one while the lane is idle (a collective of at most one
// slot is queued without waking the lane's thread, so the common
// `allreduce(t).wait()` costs no hand-off between threads). They run in
// lockstep phases (every rank posts a phase number on its slot and waits for
// the others'), a piece of at most kShmSlotBytes per rank at a time, in one
// of two buffers by turns, so a rank may write the next piece while others
// still read this one. allreduce takes one phase per piece on 2 ranks and
// for small pieces (every rank reduces the whole piece from all slots, in
// rank order, so every rank's result is identical), two otherwise (each
// rank reduces its share, then gathers the others'); the reductions are
// plain loops (shm_reduce.h), AVG and fp16/bf16 included. broadcast,
// allgather, reduce_scatter and barrier take one. send and recv go through
// ShmMail (shm_mail.h), matched by tag. CPU tensors only.
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <mutex>

#include "src/comm/backend.h"
#include "src/comm/shm_mail.h"
#include "src/comm/shm_reduce.h"
#include "src/comm/shm_segment.h"
#include "src/comm/shm_work.h"

namespace paisoar::comm::detail {
namespace {

// What a rank writes into its slot for the others to read: with plain
// stores the bytes sit in this core's cache and every reader pulls them
// across cores, which on some placements of the two vCPUs here ran 4-8x
// slower than memory (4 MiB allgather 1.04 ms against 0.25 ms streamed;
// 256 KiB broadcast 30 us against 19). From kStreamBytes up, messages are
// streamed to memory (copy_to_shared); smaller ones stay in cache, where
// the reader finds them fastest.
void fill_slot(uint8_t* slot, const void* from, size_t bytes, bool streamed) {
  if (streamed) {
    copy_to_shared(slot, from, bytes);
  } else {
    std::memcpy(slot, from, bytes);
  }
}

// Messages from this size up are written to the slots past the cache.
constexpr size_t kStreamBytes = size_t{256} << 10;
// Pieces up to this size are reduced in one phase on any number of ranks.
constexpr size_t kOnePhaseBytes = size_t{64} << 10;

class ShmBackend : public ::c10d::Backend {
 public:
  ShmBackend(std::unique_ptr<ShmSegment> segment, int rank, int size, std::chrono::milliseconds timeout)
      : ::c10d::Backend(rank, size), segment_(std::move(segment)), timeout_(timeout) {}

  ~ShmBackend() override {
    stopping_ = true;
    ShmSlot& mine = segment_->slot(rank_);
    mine.left = 1;
    shm_wake(mine.phase);
    for (int r = 0; r < size_; ++r) {
      shm_wake(segment_->mailbox(rank_, r).posted);  // the peers' drainers see `left`
      shm_wake(segment_->mailbox(r, rank_).consumed);
    }
    // Join: the lanes' and drainers' waits see stopping_ and fail what is pending.
    collectives_.reset();
    mail_.reset();
  }

  const std::string getBackendName() const override { return "paisoar-shm"; }

  c10::intrusive_ptr<::c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                             const ::c10d::AllreduceOptions& opts) override {
    at::Tensor t = single(tensors, "allreduce");
    const auto reduce = opts.reduceOp;
    return collective("allreduce", t, reduced_by(reduce, t),
                      [this, t, reduce](const std::string& what) { run_allreduce(t, reduce, what); });
  }
  c10::intrusive_ptr<::c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                             const ::c10d::BroadcastOptions& opts) override {
    at::Tensor t = single(tensors, "broadcast");
    const int root = static_cast<int>(opts.rootRank);
    TORCH_CHECK(root >= 0 && root < size_, "shm backend: broadcast root ", root, " is not a rank of ", size_);
    return collective("broadcast", t, " from rank " + std::to_string(root),
                      [this, t, root](const std::string& what) { run_broadcast(t, root, what); });
  }
  c10::intrusive_ptr<::c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                             std::vector<at::Tensor>& inputs,
                                             const ::c10d::AllgatherOptions& /*opts*/) override {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                "shm backend: allgather takes one list of ", size_, " outputs");
    at::Tensor t = single(inputs, "allgather");
    std::vector<at::Tensor> outs = outputs[0];
    for (const auto& o : outs) {
      TORCH_CHECK(o.numel() == t.numel() && o.scalar_type() == t.scalar_type(),
                  "shm backend: allgather outputs must match the input's ", t.numel(), " ", t.scalar_type());
    }
    return collective("allgather", t, "", [this, t, outs](const std::string& what) { run_allgather(t, outs, what); });
  }
  c10::intrusive_ptr<::c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                   const ::c10d::AllgatherOptions& /*opts*/) override {
    at::Tensor t = single({input}, "allgather");
    TORCH_CHECK(output.is_contiguous() && output.numel() == t.numel() * size_ && output.scalar_type() == t.scalar_type(),
                "shm backend: allgather into a tensor takes a contiguous output of ", size_, " x ", t.numel(), " ",
                t.scalar_type());
    at::Tensor out = output;
    return collective("allgather", t, "", [this, t, out](const std::string& what) { run_allgather(t, {}, what, out); });
  }
  c10::intrusive_ptr<::c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                        const ::c10d::ReduceScatterOptions& opts) override {
    at::Tensor in = single({input}, "reduce_scatter");
    TORCH_CHECK(output.is_contiguous() && in.is_contiguous() && in.numel() == output.numel() * size_ &&
                    output.scalar_type() == in.scalar_type(),
                "shm backend: reduce_scatter takes a contiguous input of ", size_, " x the output's elements");
    const auto reduce = opts.reduceOp;
    at::Tensor out = output;
    return collective("reduce_scatter", in, reduced_by(reduce, in),
                      [this, in, out, reduce](const std::string& what) { run_reduce_scatter(in, out, reduce, what); });
  }
  c10::intrusive_ptr<::c10d::Work> barrier(const ::c10d::BarrierOptions& /*opts*/) override {
    return collective("barrier", at::empty({0}), "", [this](const std::string& what) { phase(what, next_step()); });
  }
  c10::intrusive_ptr<::c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override {
    at::Tensor t = single(tensors, "send");
    check_peer(dst);
    return mail_->send(t, dst, tag);
  }
  c10::intrusive_ptr<::c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override {
    at::Tensor t = single(tensors, "recv");
    check_peer(src);
    return mail_->recv(t, src, tag);
  }

 private:
  using Clock = std::chrono::steady_clock;

  at::Tensor single(const std::vector<at::Tensor>& tensors, const char* kind) const {
    TORCH_CHECK(tensors.size() == 1, "shm backend: ", kind, " takes one tensor, got ", tensors.size());
    TORCH_CHECK(tensors[0].device().is_cpu(), "shm backend: ", kind, " takes CPU tensors, got one on ",
                tensors[0].device(), "; use backend nccl for GPU tensors");
    return tensors[0];
  }
  // " by <op>" for the signature, once the op is known to suit the dtype:
  // checked when issued, so a bad call fails on its own rank at once
  // instead of leaving the others waiting in a collective.
  static std::string reduced_by(const ::c10d::ReduceOp& reduce, const at::Tensor& t) {
    const auto op = reduce.op_;
    const auto dtype = t.scalar_type();
    const bool bitwise = op == ::c10d::ReduceOp::BAND || op == ::c10d::ReduceOp::BOR || op == ::c10d::ReduceOp::BXOR;
    TORCH_CHECK(op == ::c10d::ReduceOp::SUM || op == ::c10d::ReduceOp::AVG || op == ::c10d::ReduceOp::PRODUCT ||
                    op == ::c10d::ReduceOp::MIN || op == ::c10d::ReduceOp::MAX || bitwise,
                "shm backend: reduce op ", static_cast<int>(op), " is not supported");
    TORCH_CHECK(op != ::c10d::ReduceOp::AVG || at::isFloatingType(dtype), "shm backend: AVG takes floating tensors, not ",
                dtype);
    TORCH_CHECK(!bitwise || at::isIntegralType(dtype, /*includeBool=*/true), "shm backend: bitwise reductions take "
                "integer or bool tensors, not ", dtype);
    TORCH_CHECK(dtype != at::kBool || bitwise || op == ::c10d::ReduceOp::MIN || op == ::c10d::ReduceOp::MAX,
                "shm backend: cannot sum or multiply Bool tensors");
    return " by op " + std::to_string(static_cast<int>(op));
  }
  void check_peer(int peer) const {
    TORCH_CHECK(peer >= 0 && peer < size_ && peer != rank_, "shm backend: peer ", peer,
                " is not another rank of this group of ", size_);
  }

  // Queues `body` on the collective lane. Its signature is checked at its
  // first phase: every rank compares every rank's, so a mismatch fails the
  // collective on all of them at the same point.
  c10::intrusive_ptr<::c10d::Work> collective(const std::string& kind, const at::Tensor& t, const std::string& extra,
                                              std::function<void(const std::string&)> body) {
    std::lock_guard<std::mutex> lock(issue_mutex_);  // issue numbers in queue order
    const int64_t seq = issued_++;
    const std::string signature = kind + " of " + std::to_string(t.numel()) + " " +
                                  c10::toString(t.scalar_type()) + extra;
    auto work = c10::make_intrusive<ShmWork>(timeout_, collectives_->queue());
    // One slot's worth or less: left for the caller's wait to run (the lane's
    // thread takes it within a millisecond if nobody waits).
    const bool small = static_cast<size_t>(t.numel()) * t.element_size() <= kShmSlotBytes;
    collectives_->push([this, work, seq, signature, kind, body = std::move(body)] {
      run_to_finish(*work, [&] {
        const std::string what = kind + " #" + std::to_string(seq);
        // A failed collective may leave the ranks at different phases, where
        // later ones would pair with the wrong ones: the group is done.
        TORCH_CHECK(broken_.empty(), "shm backend: ", what, " not run: an earlier collective of this group failed (",
                    broken_, ")");
        deadline_ = Clock::now() + timeout_;
        char* mine = segment_->slot(rank_).signature[steps_ % 2];
        std::strncpy(mine, signature.c_str(), sizeof(ShmSlot::signature[0]) - 1);
        mine[sizeof(ShmSlot::signature[0]) - 1] = '\0';
        unchecked_ = true;
        try {
          body(what);
        } catch (const c10::Error& e) {
          broken_ = e.what_without_backtrace();
          throw;
        }
      });
    }, /*wake=*/!small);
    return work;
  }

  // A step of a collective: the slot buffer it writes, alternating, so that
  // no step writes what a slower rank may still read of the step before.
  // (A rank reads a step's buffers before posting the next step's phase,
  // and a writer of step s+2 has passed that phase.)
  int next_step() { return static_cast<int>(steps_++ % 2); }

  // One lockstep phase: post it, then wait until every rank has. The first
  // of a collective also checks the signatures. `meanwhile` runs between
  // the post and the wait: work of this rank's own that no peer waits for.
  void phase(const std::string& what, int buffer, const std::function<void()>& meanwhile = nullptr) {
    const uint32_t n = ++phases_;
    ShmSlot& mine = segment_->slot(rank_);
    mine.phase.store(n);  // sequentially consistent: read `sleepers` after it (shm_wait)
    if (mine.sleepers.load() != 0) shm_wake(mine.phase);
    if (meanwhile) meanwhile();
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      ShmSlot& peer = segment_->slot(r);
      // Signed distance: right across the counter's wrap.
      shm_wait(peer.phase, [&] { return static_cast<int32_t>(peer.phase.load(std::memory_order_acquire) - n) >= 0; },
               ShmWatch{segment_.get(), r, &stopping_, [r, &what] { return "rank " + std::to_string(r) + " to join " + what; }},
               deadline_, &peer.sleepers);
    }
    if (!unchecked_) return;
    unchecked_ = false;
    const char* own = mine.signature[buffer];
    for (int r = 0; r < size_; ++r) {
      const char* theirs = segment_->slot(r).signature[buffer];
      TORCH_CHECK(std::strncmp(theirs, own, sizeof(ShmSlot::signature[0])) == 0, "shm backend: size mismatch in ",
                  what, ": rank ", r, " issued ", theirs, ", rank ", rank_, " issued ", own);
    }
  }

  // Runs `each(offset, count, buffer)` over `numel` elements in pieces that
  // fit a slot buffer, one step each; at least once (an empty tensor too).
  void pieces(int64_t numel, size_t element, const std::function<void(int64_t, int64_t, int)>& each) {
    const auto per = static_cast<int64_t>(kShmSlotBytes / element);
    int64_t off = 0;
    do {
      const int64_t count = std::min(per, numel - off);
      each(off, count, next_step());
      off += count;
    } while (off < numel);
  }

  // Per piece: every rank writes it to its slot. On 2 ranks, and for
  // pieces of at most kOnePhaseBytes, every rank then reduces the whole piece
  // from all slots into its tensor (one phase). Otherwise each reduces its
  // share over all slots into its own slot, and gathers the others' shares
  // (two phases: each rank reads 2 shares' worth instead of n pieces').
  void run_allreduce(const at::Tensor& t, const ::c10d::ReduceOp& reduce, const std::string& what) {
    at::Tensor flat = t.is_contiguous() ? t : t.contiguous();
    auto* data = static_cast<uint8_t*>(flat.data_ptr());
    const size_t element = t.element_size();
    const auto dtype = t.scalar_type();
    const bool streamed = flat.numel() * element >= kStreamBytes;
    std::vector<const void*> rows(size_);
    pieces(flat.numel(), element, [&](int64_t off, int64_t count, int buffer) {
      uint8_t* piece = data + off * element;
      fill_slot(segment_->slot_data(rank_, buffer), piece, count * element, streamed);
      phase(what, buffer);
      if (size_ == 2 || count * element <= kOnePhaseBytes) {
        for (int r = 0; r < size_; ++r) rows[r] = r == rank_ ? piece : segment_->slot_data(r, buffer);
        reduce_rows(piece, rows.data(), size_, count, dtype, reduce.op_);
        return;
      }
      const int64_t begin = count * rank_ / size_, end = count * (rank_ + 1) / size_;
      for (int r = 0; r < size_; ++r) rows[r] = segment_->slot_data(r, buffer) + begin * element;
      reduce_rows(segment_->slot_data(rank_, buffer) + begin * element, rows.data(), size_, end - begin, dtype,
                  reduce.op_);
      phase(what, buffer);
      for (int r = 0; r < size_; ++r) {
        const int64_t b = count * r / size_, e = count * (r + 1) / size_;
        if (r != rank_) std::memcpy(piece + b * element, segment_->slot_data(r, buffer) + b * element, (e - b) * element);
      }
      std::memcpy(piece + begin * element, segment_->slot_data(rank_, buffer) + begin * element, (end - begin) * element);
    });
    if (flat.data_ptr() != t.data_ptr()) t.copy_(flat.view(t.sizes()));
  }

  // Per step, every rank writes a piece of each of the others' rows (row r
  // is rank r's share) to its slot; each reduces its own row's piece over
  // all ranks, in rank order, its own part read from its input.
  void run_reduce_scatter(const at::Tensor& in, const at::Tensor& out, const ::c10d::ReduceOp& reduce,
                          const std::string& what) {
    const int64_t chunk = out.numel();
    const size_t element = in.element_size();
    const auto* input = static_cast<const uint8_t*>(in.data_ptr());
    auto* output = static_cast<uint8_t*>(out.data_ptr());
    const auto per = std::max<int64_t>(1, static_cast<int64_t>(kShmSlotBytes / element / size_));
    const bool streamed = in.numel() * element >= kStreamBytes;
    std::vector<const void*> rows(size_);
    int64_t off = 0;
    do {
      const int64_t count = std::min(per, chunk - off);
      const int buffer = next_step();
      uint8_t* mine = segment_->slot_data(rank_, buffer);
      for (int r = 0; r < size_; ++r) {
        if (r != rank_) fill_slot(mine + r * count * element, input + (r * chunk + off) * element, count * element, streamed);
      }
      phase(what, buffer);
      if (count > 0) {
        for (int r = 0; r < size_; ++r) {
          rows[r] = r == rank_ ? input + (rank_ * chunk + off) * element
                               : segment_->slot_data(r, buffer) + rank_ * count * element;
        }
        reduce_rows(output + off * element, rows.data(), size_, count, in.scalar_type(), reduce.op_);
      }
      off += count;
    } while (off < chunk);
  }

  void run_broadcast(const at::Tensor& t, int root, const std::string& what) {
    at::Tensor flat = t.is_contiguous() ? t : t.contiguous();
    auto* data = static_cast<uint8_t*>(flat.data_ptr());
    const size_t element = t.element_size();
    const bool streamed = flat.numel() * element >= kStreamBytes;
    pieces(flat.numel(), element, [&](int64_t off, int64_t count, int buffer) {
      uint8_t* slot = segment_->slot_data(root, buffer);
      if (rank_ == root) fill_slot(slot, data + off * element, count * element, streamed);
      phase(what, buffer);
      if (rank_ != root) std::memcpy(data + off * element, slot, count * element);
    });
    if (rank_ != root && flat.data_ptr() != t.data_ptr()) t.copy_(flat.view(t.sizes()));
  }

  // Rank r's input lands in outs[r] (those that are not contiguous are
  // gathered into a copy and written back at the end), or with `into`
  // defined (contiguous, n times the input) in its r-th part.
  void run_allgather(const at::Tensor& t, const std::vector<at::Tensor>& outs, const std::string& what,
                     const at::Tensor& into = at::Tensor()) {
    at::Tensor flat = t.is_contiguous() ? t : t.contiguous();
    const auto* input = static_cast<const uint8_t*>(flat.data_ptr());
    const size_t element = t.element_size();
    const bool streamed = flat.numel() * element >= kStreamBytes;
    std::vector<at::Tensor> staged(outs.size());
    std::vector<uint8_t*> dst(size_);
    for (int r = 0; r < size_; ++r) {
      if (into.defined()) {
        dst[r] = static_cast<uint8_t*>(into.data_ptr()) + r * flat.numel() * element;
        continue;
      }
      staged[r] = outs[r].is_contiguous() ? outs[r] : outs[r].contiguous();
      dst[r] = static_cast<uint8_t*>(staged[r].data_ptr());
    }
    pieces(flat.numel(), element, [&](int64_t off, int64_t count, int buffer) {
      const size_t bytes = count * element;
      fill_slot(segment_->slot_data(rank_, buffer), input + off * element, bytes, streamed);
      // Our own piece straight from the input, while the others write theirs.
      phase(what, buffer, [&] {
        if (dst[rank_] != input) std::memmove(dst[rank_] + off * element, input + off * element, bytes);
      });
      for (int r = 0; r < size_; ++r) {
        if (r != rank_) std::memcpy(dst[r] + off * element, segment_->slot_data(r, buffer), bytes);
      }
    });
    for (size_t r = 0; r < outs.size(); ++r) {
      if (staged[r].data_ptr() != outs[r].data_ptr()) outs[r].copy_(staged[r].view(outs[r].sizes()));
    }
  }

  std::unique_ptr<ShmSegment> segment_;
  std::chrono::milliseconds timeout_;
  std::atomic<bool> stopping_{false};
  std::mutex issue_mutex_;  // callers' threads: guards issued_
  int64_t issued_ = 0;
  // The collective lane's own state.
  uint32_t phases_ = 0;
  uint64_t steps_ = 0;
  bool unchecked_ = false;  // the running collective's signature is still to be checked
  std::string broken_;      // why an earlier collective failed
  Clock::time_point deadline_;
  std::unique_ptr<ShmMail> mail_ = std::make_unique<ShmMail>(*segment_, rank_, timeout_, stopping_);
  std::unique_ptr<Lane> collectives_ = std::make_unique<Lane>();  // last: its thread starts after the rest
};

}  // namespace

C10dGroupPtr make_shm_group(const Store& store, int rank, int size, std::chrono::milliseconds timeout) {
  auto segment = std::make_unique<ShmSegment>(store, rank, size, timeout);
  return c10::make_intrusive<ShmBackend>(std::move(segment), rank, size, timeout);
}

}  // namespace paisoar::comm::detail
