// ShmSegment: the shared memory a Backend::Shm group's ranks exchange data
// through: one /dev/shm segment per group, created by rank 0 (mode 0600,
// space reserved up front so a full /dev/shm is an error at creation, never a
// SIGBUS later) and unlinked once every rank has mapped it, so nothing is left
// behind and no later process can attach. Holds a slot per rank (collectives)
// and a mailbox per ordered pair of ranks (send/recv), each with futex words.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "paisoar/comm/store.h"

namespace paisoar::comm::detail {

// Bytes of a rank's slot buffer (it has two, used by alternate steps) and of
// a mailbox: larger messages go in pieces.
inline constexpr size_t kShmSlotBytes = size_t{1} << 20;
inline constexpr size_t kShmMailBytes = size_t{256} << 10;

struct alignas(64) ShmSlot {
  std::atomic<uint32_t> phase;  // phases this rank has reached (futex word)
  std::atomic<uint32_t> left;   // 1: the rank's backend is gone
  std::atomic<uint32_t> sleepers;  // ranks asleep on `phase`: a post wakes them only when there are any
  int32_t pid;
  char signature[2][116];       // a collective's, checked across ranks (by step parity)
  uint64_t cpus[16];            // the rank's CPU affinity mask (CPUs 0-1023), written before it reports mapped
};

struct alignas(64) ShmMailbox {
  std::atomic<uint32_t> posted;    // pieces the sender wrote (futex word)
  std::atomic<uint32_t> consumed;  // pieces the receiver read (futex word)
  int32_t tag;
  uint64_t total;                  // the message's bytes
  uint64_t bytes;                  // this piece's bytes
};

class ShmSegment {
 public:
  // Collective over the ranks of `store` (a group's prefixed store). Throws
  // c10::Error naming /dev/shm when it has no room.
  ShmSegment(const Store& store, int rank, int size, std::chrono::milliseconds timeout);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  int size() const { return size_; }
  // More ranks than the CPUs they may run on, all their affinity masks
  // together (waits then yield instead of spinning): ranks bound to a core
  // each are not, ranks sharing one mask larger than the group are not,
  // four ranks on two CPUs are.
  bool oversubscribed() const { return oversubscribed_; }
  ShmSlot& slot(int rank);
  uint8_t* slot_data(int rank, int buffer);
  ShmMailbox& mailbox(int src, int dst);
  uint8_t* mail_data(int src, int dst);

 private:
  int size_;
  bool oversubscribed_ = false;
  size_t bytes_ = 0;
  uint8_t* base_ = nullptr;
  // Offsets of the four regions from base_, computed once (the waits use them).
  size_t slots_ = 0, mailboxes_ = 0, slot_data_ = 0, mail_data_ = 0;
};

// Wakes every waiter on `word`, in any process.
void shm_wake(std::atomic<uint32_t>& word);

// What a wait watches besides its condition: the peer it waits for (its
// `left` word and its process) and this rank's own shutdown.
struct ShmWatch {
  ShmSegment* segment;
  int peer;
  const std::atomic<bool>* stopping;
  std::function<std::string()> what;  // "rank 1 to join allreduce #3", for errors
};

// Waits until ready() holds: spins briefly, then yields the core a while
// (a peer may be waiting for it when ranks outnumber cores), then sleeps on
// `word` (a futex, woken by shm_wake) until `deadline`. With `sleepers`, it
// counts itself there while asleep, so that a poster that finds none skips
// the wake-up system call (the post must be sequentially consistent, and
// read `sleepers` after it). Throws c10::DistBackendError saying "timed
// out", or "connection closed by peer" when the peer left or exited.
void shm_wait(std::atomic<uint32_t>& word, const std::function<bool()>& ready, const ShmWatch& watch,
              std::chrono::steady_clock::time_point deadline, std::atomic<uint32_t>* sleepers = nullptr);

// The same, but returns false at `deadline` instead of throwing.
bool shm_wait_until(std::atomic<uint32_t>& word, const std::function<bool()>& ready, const ShmWatch& watch,
                    std::chrono::steady_clock::time_point deadline, std::atomic<uint32_t>* sleepers = nullptr);

}  // namespace paisoar::comm::detail
