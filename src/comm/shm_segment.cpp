// ShmSegment: shm_open + posix_fallocate + mmap by rank 0, the name passed
// through the store, shm_unlink once all have mapped it. shm_wait: a spin,
// then FUTEX_WAIT (shared, not private: the waker may be another process) in
// slices of at most 50 ms, so a peer that left or died is noticed.
#include "src/comm/shm_segment.h"
#include "src/comm/shm_wait_policy.h"
#include "src/comm/shm_names.h"

#include <c10/util/Exception.h>

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <climits>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

namespace paisoar::comm::detail {
namespace {

// This process's affinity mask into its slot, for the others to count.
void write_affinity(ShmSlot& slot) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const bool known = ::sched_getaffinity(0, sizeof(set), &set) == 0;
  for (int word = 0; word < 16; ++word) {
    uint64_t bits = 0;
    for (int bit = 0; bit < 64; ++bit) {
      const int cpu = word * 64 + bit;
      if (!known || (cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set))) bits |= uint64_t{1} << bit;
    }
    slot.cpus[word] = bits;
  }
}

// CPUs in the union of every rank's mask.
int cpus_of_all(ShmSegment& segment) {
  int count = 0;
  for (int word = 0; word < 16; ++word) {
    uint64_t bits = 0;
    for (int r = 0; r < segment.size(); ++r) bits |= segment.slot(r).cpus[word];
    count += __builtin_popcountll(bits);
  }
  return std::max(count, 1);
}
constexpr auto kSleepSlice = std::chrono::milliseconds(50);

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

struct Layout {
  size_t slots, mailboxes, slot_data, mail_data, total;
  explicit Layout(int size) {
    const size_t n = static_cast<size_t>(size);
    slots = 0;
    mailboxes = round_up(n * sizeof(ShmSlot), 4096);
    slot_data = mailboxes + round_up(n * n * sizeof(ShmMailbox), 4096);
    mail_data = slot_data + n * 2 * kShmSlotBytes;
    total = mail_data + n * n * kShmMailBytes;
  }
};

std::string unique_name() {
  static std::atomic<uint64_t> counter{0};
  std::random_device random;
  return "/" + shm_segment_prefix(::getuid(), ::getpid()) + std::to_string(counter++) + "-" +
         std::to_string(random());
}

std::string errno_text(int error) { return std::strerror(error); }

// Exited, or killed and not yet reaped (a zombie still answers kill(pid, 0)).
bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');  // the name before it may hold anything
  if (paren == std::string::npos || paren + 2 >= text.size()) return false;
  const char state = text[paren + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace

// Every step is agreed through the store, so the ranks either all hold the
// segment or all throw the same reason (and Backend::Auto can fall back to
// Gloo on every rank): rank 0 publishes the name or "!reason", each rank its
// mapping ("1" or "!reason"), then rank 0 the verdict ("ok" or "!reason").
ShmSegment::ShmSegment(const Store& store, int rank, int size, std::chrono::milliseconds timeout)
    : size_(size) {
  const Layout layout(size);
  bytes_ = layout.total;
  slots_ = layout.slots;
  mailboxes_ = layout.mailboxes;
  slot_data_ = layout.slot_data;
  mail_data_ = layout.mail_data;
  auto refuse = [](const std::string& value) { return value.rfind('!', 0) == 0; };
  std::string name;
  std::string failure;  // this rank's reason, empty when it holds the mapping
  int fd = -1;
  bool unlinked = false;
  try {
    if (rank == 0) {
      name = unique_name();
      fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd < 0) {
        failure = "cannot create /dev/shm" + name + ": " + errno_text(errno);
      } else {
        const int reserved = ::ftruncate(fd, static_cast<off_t>(bytes_)) == 0
                                 ? ::posix_fallocate(fd, 0, static_cast<off_t>(bytes_))
                                 : errno;
        if (reserved != 0) {
          failure = "/dev/shm has no room for " + std::to_string(bytes_) + " bytes (" + errno_text(reserved) +
                    "); free space there (df -h /dev/shm)";
          ::close(fd);
          ::shm_unlink(name.c_str());
          unlinked = true;
          fd = -1;
        }
      }
      store.set("shm/name", failure.empty() ? name : "!" + failure);
      TORCH_CHECK(failure.empty(), "shm backend: ", failure);
    } else {
      name = store.get("shm/name");
      TORCH_CHECK(!refuse(name), "shm backend: rank 0 could not make the group's segment: ", name.substr(1));
      fd = ::shm_open(name.c_str(), O_RDWR, 0600);
      if (fd < 0) {
        failure = "rank " + std::to_string(rank) + " cannot open /dev/shm" + name + " made by rank 0: " +
                  errno_text(errno) + " (the ranks of a shm group must run on one host as one user)";
      } else {
        struct stat st {};
        if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes_) {
          failure = "/dev/shm" + name + " is not the size this group needs";
        }
      }
    }
    void* mapped = MAP_FAILED;
    if (failure.empty()) {
      mapped = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (mapped == MAP_FAILED) failure = "rank " + std::to_string(rank) + " cannot map /dev/shm" + name + ": " + errno_text(errno);
    }
    if (fd >= 0) ::close(fd);
    fd = -1;
    if (mapped != MAP_FAILED) {
      base_ = static_cast<uint8_t*>(mapped);
      slot(rank).pid = ::getpid();
      write_affinity(slot(rank));
    }
    store.set("shm/mapped/" + std::to_string(rank), failure.empty() ? "1" : "!" + failure);
    std::string verdict;
    if (rank == 0) {
      std::vector<std::string> keys;
      for (int r = 0; r < size; ++r) keys.push_back("shm/mapped/" + std::to_string(r));
      try {
        store.wait(keys, timeout);
        for (const auto& key : keys) {
          const std::string mapped_by = store.get(key);
          if (refuse(mapped_by) && verdict.empty()) verdict = mapped_by;
        }
      } catch (const std::exception& e) {
        verdict = std::string("!not every rank mapped the segment in time: ") + e.what();
      }
      ::shm_unlink(name.c_str());  // mapped by all (or given up): the name is no longer needed
      unlinked = true;
      store.set("shm/ready", verdict.empty() ? "ok" : verdict);
    } else {
      verdict = store.get("shm/ready");
      if (verdict == "ok") verdict.clear();
    }
    if (!verdict.empty() && base_ != nullptr) {
      ::munmap(base_, bytes_);
      base_ = nullptr;
    }
    TORCH_CHECK(failure.empty(), "shm backend: ", failure);
    TORCH_CHECK(verdict.empty(), "shm backend: ", verdict.substr(1));
    oversubscribed_ = size > cpus_of_all(*this);
  } catch (...) {  // a refusal, or the store failing mid-way: leave nothing behind
    if (fd >= 0) ::close(fd);
    if (rank == 0 && !unlinked && !name.empty()) ::shm_unlink(name.c_str());
    if (base_ != nullptr) ::munmap(base_, bytes_);
    base_ = nullptr;
    throw;
  }
}

ShmSegment::~ShmSegment() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

ShmSlot& ShmSegment::slot(int rank) { return reinterpret_cast<ShmSlot*>(base_ + slots_)[rank]; }

uint8_t* ShmSegment::slot_data(int rank, int buffer) {
  return base_ + slot_data_ + (rank * 2 + buffer) * kShmSlotBytes;
}

ShmMailbox& ShmSegment::mailbox(int src, int dst) {
  return reinterpret_cast<ShmMailbox*>(base_ + mailboxes_)[src * size_ + dst];
}

uint8_t* ShmSegment::mail_data(int src, int dst) {
  return base_ + mail_data_ + static_cast<size_t>(src * size_ + dst) * kShmMailBytes;
}

void shm_wake(std::atomic<uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

bool shm_wait_until(std::atomic<uint32_t>& word, const std::function<bool()>& ready, const ShmWatch& watch,
                    std::chrono::steady_clock::time_point deadline, std::atomic<uint32_t>* sleepers) {
  if (ready()) return true;
  // Spin, then yield, for as long as this thread's earlier waits say pays
  // (shm_wait_policy.h); then sleep.
  using Ended = ShmWaitPolicy::Ended;
  ShmWaitPolicy& policy = ShmWaitPolicy::of_this_thread();
  const bool oversubscribed = watch.segment->oversubscribed();
  const auto start = std::chrono::steady_clock::now();
  auto ended = [&](Ended phase) {
    policy.record(std::chrono::steady_clock::now() - start, phase, oversubscribed);
    return true;
  };
  const auto spin_for = policy.spin(oversubscribed);
  for (int i = 1; spin_for.count() > 0; ++i) {
    if (ready()) return ended(Ended::kSpinning);
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 0 && std::chrono::steady_clock::now() - start >= spin_for) break;
  }
  const auto yield_until = std::chrono::steady_clock::now() + policy.yield(oversubscribed);
  while (std::chrono::steady_clock::now() < yield_until) {
    if (ready()) return ended(Ended::kYielding);
    ::sched_yield();
  }
  ShmSlot& peer = watch.segment->slot(watch.peer);
  while (true) {
    const uint32_t seen = word.load(std::memory_order_acquire);
    if (ready()) return ended(Ended::kAsleep);
    if (watch.stopping->load()) C10_THROW_ERROR(DistBackendError, "shm backend: the group was closed on this rank");
    if (peer.left.load()) {
      C10_THROW_ERROR(DistBackendError, "shm backend: rank " + std::to_string(watch.peer) +
                                            " left the group: connection closed by peer, waiting for " +
                                            watch.what());
    }
    if (peer.pid != 0 && peer.pid != ::getpid() && process_gone(peer.pid)) {
      C10_THROW_ERROR(DistBackendError, "shm backend: rank " + std::to_string(watch.peer) + " (pid " +
                                            std::to_string(peer.pid) +
                                            ") exited: connection closed by peer, waiting for " + watch.what());
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    const auto slice = std::min<std::chrono::steady_clock::duration>(deadline - now, kSleepSlice);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(slice).count();
    struct timespec relative {
      static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)
    };
    if (sleepers == nullptr) {
      ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, seen, &relative, nullptr, 0);
      continue;
    }
    // Counted first, then the word read again: a poster either sees the
    // count (and wakes us) or posted before this read (and we do not sleep).
    sleepers->fetch_add(1);
    const uint32_t now_seen = word.load();
    if (!ready()) {
      ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, now_seen, &relative, nullptr, 0);
    }
    sleepers->fetch_sub(1);
  }
}

void shm_wait(std::atomic<uint32_t>& word, const std::function<bool()>& ready, const ShmWatch& watch,
              std::chrono::steady_clock::time_point deadline, std::atomic<uint32_t>* sleepers) {
  if (!shm_wait_until(word, ready, watch, deadline, sleepers)) {
    C10_THROW_ERROR(DistBackendError, "shm backend: timed out waiting for " + watch.what());
  }
}

}  // namespace paisoar::comm::detail
