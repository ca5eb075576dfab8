// FlightRecorder over a MAP_SHARED mapping of its file (or an anonymous one):
// entries are claimed with one fetch_add on the header's count and written
// under their seqlock; the activity is three relaxed-enough stores.
#include "src/comm/flight_recorder.h"

#include <c10/util/Exception.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

namespace paisoar::comm {
namespace {

using util::flight::Entry;
using util::flight::File;

thread_local int thread_activity = -1;  // ThreadActivityScope's; -1: the process's

void copy_text(char* field, size_t size, const std::string& text) {
  std::memset(field, 0, size);
  std::memcpy(field, text.data(), std::min(text.size(), size - 1));
}

void init_header(File* file, int rank) {
  auto& h = file->header;
  std::memcpy(h.magic, util::flight::kMagic, sizeof h.magic);
  h.layout = util::flight::kLayout;
  h.capacity = util::flight::kCapacity;
  h.rank = rank;
  h.pid = static_cast<int32_t>(::getpid());
  h.activity.store(static_cast<int32_t>(util::Activity::Setup));
  h.step.store(-1);
  h.activity_since_ns.store(util::flight::now_ns());
}

}  // namespace

FlightRecorder::FlightRecorder(File* file, size_t mapped, std::string path, int rank)
    : file_(file), mapped_(mapped), path_(std::move(path)) {
  init_header(file_, rank);
}

FlightRecorder::~FlightRecorder() { ::munmap(file_, mapped_); }

std::shared_ptr<FlightRecorder> FlightRecorder::open_file(const std::string& path, int rank) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const auto fail = [&](const char* what) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    C10_THROW_ERROR(Error, std::string("cannot ") + what + " the flight record '" + path + "' (PAISOAR_FLIGHT_RECORD): " +
                               std::strerror(error) + "; unset PAISOAR_FLIGHT_RECORD or give a writable path");
  };
  if (fd < 0) fail("create");
  if (::ftruncate(fd, sizeof(File)) != 0) fail("size");
  void* at = ::mmap(nullptr, sizeof(File), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (at == MAP_FAILED) fail("map");
  ::close(fd);  // the mapping keeps the file
  return std::shared_ptr<FlightRecorder>(new FlightRecorder(static_cast<File*>(at), sizeof(File), path, rank));
}

std::shared_ptr<FlightRecorder> FlightRecorder::in_memory(int rank) {
  void* at = ::mmap(nullptr, sizeof(File), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  TORCH_CHECK(at != MAP_FAILED, "cannot map memory for a flight record: ", std::strerror(errno));
  return std::shared_ptr<FlightRecorder>(new FlightRecorder(static_cast<File*>(at), sizeof(File), "", rank));
}

std::shared_ptr<FlightRecorder> FlightRecorder::from_env(const EnvMap& env) {
  const auto path = env.find("PAISOAR_FLIGHT_RECORD");
  if (path == env.end() || path->second.empty()) return nullptr;
  // Every Communicator::from_env of the process shares one recorder: opening
  // the file again would truncate the live record.
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<FlightRecorder>> open;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto known = open[path->second].lock()) return known;
  const auto rank = env.find("RANK");
  int r = -1;
  try {
    if (rank != env.end()) r = std::stoi(rank->second);
  } catch (const std::exception&) {
  }
  auto recorder = open_file(path->second, r);
  open[path->second] = recorder;
  return recorder;
}

int FlightRecorder::group(const std::string& name, const std::vector<int>& global_ranks) {
  std::string key = name;
  for (int r : global_ranks) {
    key += ',';
    key += std::to_string(r);
  }
  std::lock_guard<std::mutex> lock(groups_mutex_);
  const auto known = std::find(group_keys_.begin(), group_keys_.end(), key);
  if (known != group_keys_.end()) return static_cast<int>(known - group_keys_.begin());
  if (group_keys_.size() >= static_cast<size_t>(util::flight::kMaxGroups)) return -1;
  const int index = static_cast<int>(group_keys_.size());
  util::flight::Group& g = file_->header.groups[index];
  g.size = static_cast<int32_t>(global_ranks.size());
  g.member_count = static_cast<int32_t>(std::min<size_t>(global_ranks.size(), util::flight::kMaxMembers));
  for (int m = 0; m < g.member_count; ++m) g.members[m] = global_ranks[static_cast<size_t>(m)];
  copy_text(g.name, sizeof g.name, name);
  g.ready.store(1);
  file_->header.group_count.store(static_cast<uint32_t>(index + 1));
  group_keys_.push_back(std::move(key));
  return index;
}

FlightRecorder::Ticket FlightRecorder::issue(int group, int64_t seq, const char* op, const char* dtype, int64_t numel,
                                             int peer) {
  if (group < 0) return {};
  const uint64_t index = file_->header.written.fetch_add(1);
  Entry& e = file_->ring[index % util::flight::kCapacity];
  const uint64_t version = 2 * (index + 1);  // unique per use of the entry, even when written
  e.version.store(version - 1);
  std::atomic_thread_fence(std::memory_order_release);  // odd before the fields change (seqlock writer)
  e.seq = seq;
  e.group = group;
  e.activity = thread_activity >= 0 ? thread_activity : file_->header.activity.load(std::memory_order_relaxed);
  e.step = file_->header.step.load(std::memory_order_relaxed);
  e.numel = numel;
  e.enqueued_ns = util::flight::now_ns();
  e.waited_ns.store(0, std::memory_order_relaxed);
  e.ended_ns.store(0, std::memory_order_relaxed);
  e.peer = peer;
  std::strncpy(e.op, op, sizeof e.op - 1);
  e.op[sizeof e.op - 1] = 0;
  std::strncpy(e.dtype, dtype, sizeof e.dtype - 1);
  e.dtype[sizeof e.dtype - 1] = 0;
  e.version.store(version);
  return {&e, version};
}

namespace {

// Sets one time field of the ticket's entry, unless the ring reused it; odd
// while the bytes change, so a reader drops the torn copy.
void stamp(const FlightRecorder::Ticket& ticket, std::atomic<int64_t> Entry::*field, int64_t value) {
  if (!ticket.entry) return;
  uint64_t expected = ticket.version;
  if (!ticket.entry->version.compare_exchange_strong(expected, ticket.version + 1)) return;
  std::atomic_thread_fence(std::memory_order_release);
  (ticket.entry->*field).store(value);
  ticket.entry->version.store(ticket.version);
}

}  // namespace

void FlightRecorder::waiting(const Ticket& ticket) {
  if (ticket.entry && ticket.entry->waited_ns.load(std::memory_order_relaxed) == 0) {
    stamp(ticket, &Entry::waited_ns, util::flight::now_ns());
  }
}

void FlightRecorder::done(const Ticket& ticket, bool ok) { stamp(ticket, &Entry::ended_ns, ok ? util::flight::now_ns() : -1); }

void FlightRecorder::set_activity(util::Activity activity, int64_t step) {
  auto& h = file_->header;
  if (step >= 0) h.step.store(step, std::memory_order_relaxed);
  if (h.activity.load(std::memory_order_relaxed) == static_cast<int32_t>(activity)) return;
  h.activity_since_ns.store(util::flight::now_ns(), std::memory_order_relaxed);
  h.activity.store(static_cast<int32_t>(activity), std::memory_order_release);
}

util::Activity FlightRecorder::activity() const {
  return static_cast<util::Activity>(file_->header.activity.load(std::memory_order_relaxed));
}

util::FlightSnapshot FlightRecorder::snapshot() const {
  const std::string a(reinterpret_cast<const char*>(file_), sizeof(File));
  const std::string b(reinterpret_cast<const char*>(file_), sizeof(File));
  util::FlightSnapshot out;
  util::flight::parse(a, b, out);
  return out;
}

ThreadActivityScope::ThreadActivityScope(util::Activity activity) : previous_(thread_activity) {
  thread_activity = static_cast<int>(activity);
}

ThreadActivityScope::~ThreadActivityScope() { thread_activity = previous_; }

ActivityScope::ActivityScope(FlightRecorder* recorder, util::Activity activity) : recorder_(recorder) {
  if (!recorder_) return;
  previous_ = recorder_->activity();
  recorder_->set_activity(activity);
}

ActivityScope::~ActivityScope() {
  if (recorder_) recorder_->set_activity(previous_);
}

}  // namespace paisoar::comm
