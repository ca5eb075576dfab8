// ShmSegment: shm_open + posix_fallocate + mmap by rank 0, the name passed
// through the store, shm_unlink once all have mapped it. shm_wait: a spin,
// then FUTEX_WAIT (shared, not private: the waker may be another process) in
// slices of at most 50 ms, so a peer that left or died is noticed.
#include "src/comm/shm_segment.h"

#include <c10/util/Exception.h>

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <random>
#include <thread>

namespace paisoar::comm::detail {
namespace {

constexpr int kSpins = 2000;
constexpr auto kSleepSlice = std::chrono::milliseconds(50);

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

struct Layout {
  size_t slots, mailboxes, slot_data, mail_data, total;
  explicit Layout(int size) {
    const size_t n = static_cast<size_t>(size);
    slots = 0;
    mailboxes = round_up(n * sizeof(ShmSlot), 4096);
    slot_data = mailboxes + round_up(n * n * sizeof(ShmMailbox), 4096);
    mail_data = slot_data + n * kShmSlotBytes;
    total = mail_data + n * n * kShmMailBytes;
  }
};

std::string unique_name() {
  static std::atomic<uint64_t> counter{0};
  std::random_device random;
  return "/paisoar-" + std::to_string(::getuid()) + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter++) + "-" + std::to_string(random());
}

std::string errno_text(int error) { return std::strerror(error); }

}  // namespace

ShmSegment::ShmSegment(const Store& store, int rank, int size, std::chrono::milliseconds timeout) : size_(size) {
  const Layout layout(size);
  bytes_ = layout.total;
  std::string name;
  int fd = -1;
  if (rank == 0) {
    name = unique_name();
    fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    TORCH_CHECK(fd >= 0, "shm backend: cannot create /dev/shm", name, ": ", errno_text(errno),
                "; use backend gloo");
    const int reserved = ::ftruncate(fd, static_cast<off_t>(bytes_)) == 0
                             ? ::posix_fallocate(fd, 0, static_cast<off_t>(bytes_))
                             : errno;
    if (reserved != 0) {
      ::close(fd);
      ::shm_unlink(name.c_str());
      store.set("shm/name", "");  // the others give up too
      TORCH_CHECK(false, "shm backend: /dev/shm has no room for ", bytes_, " bytes (", errno_text(reserved),
                  "); free space there (df -h /dev/shm) or use backend gloo");
    }
    store.set("shm/name", name);
  } else {
    name = store.get("shm/name");
    TORCH_CHECK(!name.empty(), "shm backend: rank 0 could not create the group's segment in /dev/shm");
    fd = ::shm_open(name.c_str(), O_RDWR, 0600);
    TORCH_CHECK(fd >= 0, "shm backend: cannot open /dev/shm", name, " made by rank 0: ", errno_text(errno),
                " (ranks of one shm group must run on one host as one user)");
    struct stat st {};
    TORCH_CHECK(::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) == bytes_, "shm backend: /dev/shm",
                name, " is not the size this group needs");
  }
  void* mapped = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int map_error = errno;
  ::close(fd);
  if (mapped == MAP_FAILED) {
    if (rank == 0) ::shm_unlink(name.c_str());
    TORCH_CHECK(false, "shm backend: cannot map /dev/shm", name, ": ", errno_text(map_error));
  }
  base_ = static_cast<uint8_t*>(mapped);
  slot(rank).pid = ::getpid();
  store.set("shm/mapped/" + std::to_string(rank), "1");
  if (rank == 0) {
    std::vector<std::string> keys;
    for (int r = 0; r < size; ++r) keys.push_back("shm/mapped/" + std::to_string(r));
    try {
      store.wait(keys, timeout);
    } catch (...) {
      ::shm_unlink(name.c_str());
      ::munmap(base_, bytes_);
      throw;
    }
    ::shm_unlink(name.c_str());  // every rank holds its mapping: the name is no longer needed
  }
}

// A rank that cannot open or map the segment never sets its key, and rank 0
// fails at the store's timeout; so that is only for a broken host, while the
// common failure (no room) is agreed at once through an empty name.

ShmSegment::~ShmSegment() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

ShmSlot& ShmSegment::slot(int rank) { return reinterpret_cast<ShmSlot*>(base_ + Layout(size_).slots)[rank]; }

uint8_t* ShmSegment::slot_data(int rank) { return base_ + Layout(size_).slot_data + rank * kShmSlotBytes; }

ShmMailbox& ShmSegment::mailbox(int src, int dst) {
  return reinterpret_cast<ShmMailbox*>(base_ + Layout(size_).mailboxes)[src * size_ + dst];
}

uint8_t* ShmSegment::mail_data(int src, int dst) {
  return base_ + Layout(size_).mail_data + static_cast<size_t>(src * size_ + dst) * kShmMailBytes;
}

void shm_wake(std::atomic<uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

bool shm_wait_until(std::atomic<uint32_t>& word, const std::function<bool()>& ready, const ShmWatch& watch,
                    std::chrono::steady_clock::time_point deadline) {
  for (int i = 0; i < kSpins; ++i) {
    if (ready()) return true;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  ShmSlot& peer = watch.segment->slot(watch.peer);
  while (true) {
    const uint32_t seen = word.load(std::memory_order_acquire);
    if (ready()) return true;
    if (watch.stopping->load()) C10_THROW_ERROR(DistBackendError, "shm backend: the group was closed on this rank");
    if (peer.left.load()) {
      C10_THROW_ERROR(DistBackendError, "shm backend: rank " + std::to_string(watch.peer) +
                                            " left the group: connection closed by peer, waiting for " +
                                            watch.what());
    }
    if (peer.pid != 0 && peer.pid != ::getpid() && ::kill(peer.pid, 0) != 0 && errno == ESRCH) {
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
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, seen, &relative, nullptr, 0);
  }
}

void shm_wait(std::atomic<uint32_t>& word, const std::function<bool()>& ready, const ShmWatch& watch,
              std::chrono::steady_clock::time_point deadline) {
  if (!shm_wait_until(word, ready, watch, deadline)) {
    C10_THROW_ERROR(DistBackendError, "shm backend: timed out waiting for " + watch.what());
  }
}

}  // namespace paisoar::comm::detail
