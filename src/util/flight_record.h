// The flight record: each rank's last collectives and what its training loop
// is doing, in a small file the rank maps shared and writes as it goes, so a
// launcher on the same host can read it at any moment, even while the rank is
// stopped (SIGSTOP), stuck, or dead. The layout (plain structs, this host's
// byte order, CLOCK_MONOTONIC nanoseconds) and its reader are here, header
// only, for both sides: comm::FlightRecorder writes it (libpaisoar), the
// launcher reads it (paisoar_launch, no LibTorch). docs/DIAGNOSIS.md.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace paisoar::util {

// What the training loop is doing. Setup: before the first step, or a
// program that never says (a launcher treats it like a long activity).
enum class Activity : int32_t { Setup, Data, Forward, Backward, Optimizer, Checkpoint, Evaluation, Other };

inline const char* activity_name(Activity a) {
  switch (a) {
    case Activity::Setup: return "setup";
    case Activity::Data: return "data loading";
    case Activity::Forward: return "forward";
    case Activity::Backward: return "backward";
    case Activity::Optimizer: return "the optimizer step";
    case Activity::Checkpoint: return "a checkpoint";
    case Activity::Evaluation: return "evaluation";
    case Activity::Other: return "the step's bookkeeping";
  }
  return "?";
}

namespace flight {

// The records' clock: CLOCK_MONOTONIC in nanoseconds, the same for every
// process of the host (the writer stamps with it, the launcher compares).
inline int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline constexpr char kMagic[8] = {'P', 'S', 'F', 'L', 'I', 'G', 'H', 'T'};
inline constexpr uint32_t kLayout = 1;
inline constexpr uint32_t kCapacity = 256;  // entries kept (the last 256 collectives and transfers)
inline constexpr int kMaxGroups = 32;
inline constexpr int kMaxMembers = 64;  // members listed per group (larger groups: the first 64)

// One collective (peer < 0) or point-to-point transfer (peer: the other
// side's global rank). Written under `version` as a seqlock: odd while being
// written; a reader keeps an entry only when two reads agree.
struct Entry {
  std::atomic<uint64_t> version;
  int64_t seq;          // the group's collective number (errors say "allreduce #12"); -1 for send/recv
  int32_t group;        // index into Header::groups
  int32_t activity;     // Activity when it was issued
  int64_t step;         // the step then (-1: none yet)
  int64_t numel;
  int64_t enqueued_ns;  // CLOCK_MONOTONIC
  std::atomic<int64_t> waited_ns;  // when the rank began to wait for it (0: not yet)
  std::atomic<int64_t> ended_ns;  // 0 while in flight; -1 failed
  int32_t peer;
  int32_t pad;
  char op[24];
  char dtype[16];
};

struct Group {
  std::atomic<uint32_t> ready;  // 1 once the fields below are written
  int32_t size;
  int32_t member_count;
  int32_t pad;
  int32_t members[kMaxMembers];  // global ranks, in group-rank order
  char name[64];
};

struct Header {
  char magic[8];
  uint32_t layout;
  uint32_t capacity;
  int32_t rank;  // global
  int32_t pid;
  std::atomic<uint64_t> written;  // entries claimed so far; entry i lives at ring[i % capacity]
  std::atomic<int32_t> activity;
  int32_t pad;
  std::atomic<int64_t> step;
  std::atomic<int64_t> activity_since_ns;
  std::atomic<uint32_t> group_count;
  uint32_t pad2;
  Group groups[kMaxGroups];
};

struct File {
  Header header;
  Entry ring[kCapacity];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free,
              "the flight record needs address-free 8-byte atomics to be shared between processes");

}  // namespace flight

// A flight record as read back: plain values.
struct FlightEntry {
  int64_t seq = -1;
  int group = 0;
  Activity activity = Activity::Setup;
  int64_t step = -1;
  int64_t numel = 0;
  int64_t enqueued_ns = 0;
  int64_t waited_ns = 0;  // 0: issued, nobody waits for it yet (a pipeline's early receive)
  int64_t ended_ns = 0;  // 0: still in flight; -1: failed
  int peer = -1;
  std::string op, dtype;
  bool pending() const { return ended_ns == 0; }
  // In flight and waited for: what a hang is made of.
  bool awaited() const { return ended_ns == 0 && waited_ns > 0; }
};

struct FlightGroup {
  std::string name;
  int size = 0;
  std::vector<int> members;
};

struct FlightSnapshot {
  int rank = -1;
  int pid = 0;
  Activity activity = Activity::Setup;
  int64_t step = -1;
  int64_t activity_since_ns = 0;
  std::vector<FlightGroup> groups;
  std::vector<FlightEntry> entries;  // oldest first
};

namespace flight {

inline std::string field_text(const char* field, size_t size) { return std::string(field, strnlen(field, size)); }

// `a` and `b`: the file's bytes read twice, one after the other. false when
// they are not a flight record (short, another magic or layout).
inline bool parse(const std::string& a, const std::string& b, FlightSnapshot& out) {
  if (a.size() < sizeof(File) || b.size() < sizeof(File)) return false;
  // memcpy into suitably aligned storage: the bytes are a File's.
  std::vector<File> copies(2);
  std::memcpy(static_cast<void*>(&copies[0]), a.data(), sizeof(File));
  std::memcpy(static_cast<void*>(&copies[1]), b.data(), sizeof(File));
  const File& f = copies[1];
  if (std::memcmp(f.header.magic, kMagic, sizeof kMagic) != 0 || f.header.layout != kLayout ||
      f.header.capacity != kCapacity) {
    return false;
  }
  out = FlightSnapshot{};
  out.rank = f.header.rank;
  out.pid = f.header.pid;
  out.activity = static_cast<Activity>(f.header.activity.load());
  out.step = f.header.step.load();
  out.activity_since_ns = f.header.activity_since_ns.load();
  const uint32_t groups = std::min<uint32_t>(f.header.group_count.load(), kMaxGroups);
  for (uint32_t g = 0; g < groups; ++g) {
    const Group& group = f.header.groups[g];
    FlightGroup fg;
    if (group.ready.load() == 1) {
      fg.name = field_text(group.name, sizeof group.name);
      fg.size = group.size;
      for (int m = 0; m < std::min(group.member_count, kMaxMembers); ++m) fg.members.push_back(group.members[m]);
    }
    out.groups.push_back(std::move(fg));
  }
  const uint64_t written = f.header.written.load();
  const uint64_t first = written > kCapacity ? written - kCapacity : 0;
  for (uint64_t i = first; i < written; ++i) {
    const Entry& e = f.ring[i % kCapacity];
    const Entry& before = copies[0].ring[i % kCapacity];
    const uint64_t version = e.version.load();
    // Entry i is written with version 2 (i + 1): another is the entry 256
    // before it (the slot claimed, not yet written) or a torn one.
    if (version != 2 * (i + 1) || version != before.version.load() ||
        std::memcmp(static_cast<const void*>(&e), static_cast<const void*>(&before), sizeof(Entry)) != 0) {
      continue;  // being written, or rewritten between the two reads
    }
    FlightEntry fe;
    fe.seq = e.seq;
    fe.group = e.group;
    fe.activity = static_cast<Activity>(e.activity);
    fe.step = e.step;
    fe.numel = e.numel;
    fe.enqueued_ns = e.enqueued_ns;
    fe.waited_ns = e.waited_ns.load();
    fe.ended_ns = e.ended_ns.load();
    fe.peer = e.peer;
    fe.op = field_text(e.op, sizeof e.op);
    fe.dtype = field_text(e.dtype, sizeof e.dtype);
    if (fe.group < 0 || fe.group >= static_cast<int>(out.groups.size())) continue;
    out.entries.push_back(std::move(fe));
  }
  return true;
}

}  // namespace flight
}  // namespace paisoar::util
