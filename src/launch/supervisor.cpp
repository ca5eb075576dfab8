// Supervisor: the launcher's single-threaded event loop. One poll() waits on
// the signalfd, on every rank's stdout/stderr pipe and, with several nodes,
// on the job's descriptor (JobEvents); children are reaped on SIGCHLD;
// stopping is SIGTERM (or the signal the launcher got) to each rank's
// process group, then SIGKILL when the grace period runs out.
#include "launch/supervisor.h"

#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include "launch/flag_values.h"
#include "launch/hang_diagnosis.h"
#include "launch/output_relay.h"
#include "launch/rank_error_file.h"
#include "launch/rendezvous/store_client.h"
#include "launch/shm_leftovers.h"

namespace paisoar::launch {
namespace {

using Clock = std::chrono::steady_clock;

// After SIGKILL, how long to wait for the killed processes to close the
// ranks' pipes before giving up on a holder that left the process group.
constexpr std::chrono::seconds kSigkillLinger{1};

struct RankStream {
  UniqueFd fd;
  LineRelay relay;
};

struct LiveRank {
  const RankSpec* spec;
  pid_t pid;
  RankStream out;
  RankStream err;
  bool reaped = false;

  bool pipes_open() const { return out.fd.valid() || err.fd.valid(); }
};

// True when `pid` is stopped by a signal (state T or t in /proc/<pid>/stat).
bool process_stopped(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         (stat[paren + 2] == 'T' || stat[paren + 2] == 't');
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A rank's flight record, read twice so that entries written meanwhile are
// dropped (util::flight::parse); left empty (rank -1) when there is none yet.
void read_flight_record(const std::string& path, util::FlightSnapshot& out) {
  const std::string first = read_bytes(path);
  if (first.empty()) return;
  util::flight::parse(first, read_bytes(path), out);
}

// The state of one Supervisor::run(); lives only for that call.
class GroupRun {
 public:
  GroupRun(const SupervisorOptions& options, SignalChannel& signals, const RankLogFiles& logs,
           JobEvents* job)
      : options_(options), signals_(signals), logs_(logs), job_(job), buffer_(64 * 1024) {}

  GroupOutcome run(const std::vector<RankSpec>& specs);

 private:
  void start_all(const std::vector<RankSpec>& specs);
  void wait_for_events();
  void on_signal(int sig);
  void reap();
  void check_heartbeats();
  void check_hang();
  void on_job_event();
  // Records this node's first failure, tells the job, and stops the group.
  void fail(const LiveRank& rank, const ExitStatus& status, const std::string& what);
  void job_lost(const StoreConnectionLost& e);
  bool read_once(RankStream& stream);  // false when nothing more is readable now
  void drain(LiveRank& rank);  // reads what the pipes hold now; never blocks
  void begin_stop(int sig);
  void kill_all();
  void signal_all(int sig);
  bool all_reaped() const;
  bool any_pipe_open() const;
  void message(const std::string& text) const {
    write_launcher_message(options_.stderr_fd, text);
  }

  const SupervisorOptions& options_;
  SignalChannel& signals_;
  const RankLogFiles& logs_;
  JobEvents* const job_;  // null for a single-node job
  std::vector<char> buffer_;
  std::vector<LiveRank> ranks_;  // filled by start_all(), never resized after
  GroupOutcome outcome_;
  bool decided_ = false;   // outcome_ says why the group ended, unless it succeeds
  bool stopping_ = false;  // the stop signal went out; deadline_ is set
  bool killed_ = false;    // SIGKILL went out; linger_deadline_ is set
  Clock::time_point deadline_;
  Clock::time_point last_hang_check_{};
  Clock::time_point linger_deadline_;
};

GroupOutcome GroupRun::run(const std::vector<RankSpec>& specs) {
  for (int sig : signals_.drain()) {  // a Ctrl-C that came before this attempt
    if (sig != SIGCHLD) {
      outcome_.kind = GroupOutcome::Kind::kInterrupted;
      outcome_.signal = sig;
      return outcome_;
    }
  }
  start_all(specs);
  for (;;) {
    if (all_reaped()) {
      for (LiveRank& rank : ranks_) drain(rank);
      if (!any_pipe_open()) break;
      if (killed_ && Clock::now() >= linger_deadline_) {
        // SIGKILL went to every group; a holder that survived it left the group.
        for (const LiveRank& rank : ranks_) {
          if (rank.pipes_open())
            message("a process started by rank " + std::to_string(rank.spec->global_rank) +
                    " left its process group and still holds its output; it keeps running");
        }
        break;
      }
      if (!stopping_) {
        message("all ranks exited, but processes they started still hold their output; "
                "stopping them");
        begin_stop(SIGTERM);
      }
    }
    check_heartbeats();
    check_hang();
    if (stopping_ && !killed_ && Clock::now() >= deadline_) {
      kill_all();
      continue;  // re-check: there may be nothing left to wait for
    }
    wait_for_events();
  }
  for (LiveRank& rank : ranks_) {
    for (RankStream* s : {&rank.out, &rank.err}) {
      if (!s->fd.valid()) continue;
      s->relay.finish();
      s->fd.reset();
    }
  }
  return outcome_;
}

void GroupRun::start_all(const std::vector<RankSpec>& specs) {
  ranks_.reserve(specs.size());
  for (const RankSpec& spec : specs) {
    RankProcess process;
    try {
      process = spawn_rank(spec.argv, spec.env, spec.cpus);
    } catch (const SpawnError& e) {
      message(std::string(e.what()) + " (rank " + std::to_string(spec.global_rank) + ")");
      decided_ = true;
      outcome_.kind = GroupOutcome::Kind::kSpawnFailed;
      outcome_.spawn_error = e;
      begin_stop(SIGTERM);
      return;
    }
    std::string prefix =
        options_.prefix_output ? "[rank" + std::to_string(spec.global_rank) + "]: " : "";
    int log_fd = logs_.fd_for(spec.global_rank);
    const int out_fd = spec.stdout_on_console ? options_.stdout_fd : -1;
    const int err_fd = spec.stderr_on_console ? options_.stderr_fd : -1;
    ranks_.push_back(LiveRank{
        &spec, process.pid,
        RankStream{std::move(process.stdout_fd), LineRelay(prefix, out_fd, log_fd)},
        RankStream{std::move(process.stderr_fd), LineRelay(prefix, err_fd, log_fd)}});
  }
}

void GroupRun::wait_for_events() {
  std::vector<pollfd> fds;
  std::vector<RankStream*> streams;
  fds.push_back({signals_.fd(), POLLIN, 0});
  // The job's news matter only until this group's end is decided.
  fds.push_back({job_ != nullptr && !decided_ ? job_->fd() : -1, POLLIN, 0});
  for (LiveRank& rank : ranks_) {
    for (RankStream* s : {&rank.out, &rank.err}) {
      if (!s->fd.valid()) continue;
      fds.push_back({s->fd.get(), POLLIN, 0});
      streams.push_back(s);
    }
  }
  // Wake up for the next deadline: SIGKILL time, then the end of the linger.
  // Past both, only events matter (a SIGKILLed rank's SIGCHLD).
  int timeout_ms = -1;
  const Clock::time_point now = Clock::now();
  if (options_.heartbeat_timeout_s > 0 && !stopping_) {  // look at the heartbeats now and then
    timeout_ms = static_cast<int>(std::clamp(options_.heartbeat_timeout_s * 250.0, 10.0, 1000.0));
  }
  if (options_.hang_timeout_s > 0 && !stopping_) {  // and at the flight records
    const int hang_ms = static_cast<int>(std::clamp(options_.hang_timeout_s * 250.0, 10.0, 1000.0));
    timeout_ms = timeout_ms < 0 ? hang_ms : std::min(timeout_ms, hang_ms);
  }
  if (stopping_ && (!killed_ || now < linger_deadline_)) {
    Clock::time_point until = killed_ ? linger_deadline_ : deadline_;
    auto left = std::chrono::duration<double, std::milli>(until - now).count();
    timeout_ms = static_cast<int>(std::max(0.0, std::ceil(left)));
  }
  int n = ::poll(fds.data(), fds.size(), timeout_ms);
  if (n <= 0) return;  // timeout or EINTR: the caller checks the deadline
  // Output first, so a rank's last words come before the launcher's verdict.
  for (std::size_t i = 2; i < fds.size(); ++i) {
    if (fds[i].revents != 0) read_once(*streams[i - 2]);
  }
  if (fds[0].revents != 0) {
    for (int sig : signals_.drain()) {
      if (sig != SIGCHLD) on_signal(sig);
    }
    reap();  // SIGCHLD may be merged; checking every rank is cheap
  }
  if (fds[1].revents != 0 && !decided_) on_job_event();
}

void GroupRun::on_job_event() {
  std::optional<std::string> reason;
  try {
    reason = job_->take_stop_reason();
  } catch (const StoreConnectionLost& e) {
    job_lost(e);
    return;
  }
  if (!reason) return;
  decided_ = true;
  outcome_.kind = GroupOutcome::Kind::kStoppedByJob;
  outcome_.reason = *reason;
  message(*reason + "; stopping this node's ranks");
  begin_stop(SIGTERM);
}

void GroupRun::job_lost(const StoreConnectionLost& e) {
  decided_ = true;
  outcome_.kind = GroupOutcome::Kind::kJobLost;
  outcome_.reason = e.what();
  message(std::string("lost the connection to node 0's launcher, which hosts the job's store: ") +
          e.what() + " (it ended, or its node cannot be reached); stopping this node's ranks");
  begin_stop(SIGTERM);
}

void GroupRun::fail(const LiveRank& rank, const ExitStatus& status, const std::string& what) {
  decided_ = true;
  outcome_.kind = GroupOutcome::Kind::kRankFailed;
  outcome_.failure = RankExit{rank.spec->local_rank, rank.spec->global_rank, rank.pid, status};
  message(what);
  std::string report = what;
  if (std::optional<std::string> error = rank.spec->error_file.empty()
                                             ? std::nullopt
                                             : read_error_file(rank.spec->error_file)) {
    // What torch's @record wrote: the exception, e.g. "ValueError: bad batch".
    std::string indented = *error;
    for (std::size_t at = indented.find('\n'); at != std::string::npos; at = indented.find('\n', at + 3))
      indented.replace(at, 1, "\n  ");
    message("rank " + std::to_string(rank.spec->global_rank) + " reported (TORCHELASTIC_ERROR_FILE): " +
            indented);
    report += " (" + error->substr(0, error->find('\n')) + ")";
  }
  if (job_ != nullptr) {
    try {
      job_->report_failure(report);
    } catch (const StoreConnectionLost& e) {
      job_lost(e);
      return;
    }
  }
  if (ranks_.size() > 1) message("stopping the other ranks");
  begin_stop(SIGTERM);
}

void GroupRun::on_signal(int sig) {
  if (outcome_.kind == GroupOutcome::Kind::kInterrupted) {
    if (!killed_) {
      message("got " + signal_name(sig) + " again; killing the ranks now");
      kill_all();
    }
    return;
  }
  decided_ = true;
  outcome_.kind = GroupOutcome::Kind::kInterrupted;
  outcome_.signal = sig;
  std::ostringstream text;
  text << "got " << signal_name(sig) << "; stopping the ranks (SIGKILL after "
       << options_.grace_period_s << " s)";
  message(text.str());
  begin_stop(sig);
}

void GroupRun::reap() {
  for (LiveRank& rank : ranks_) {
    if (rank.reaped) continue;
    int status = 0;
    pid_t r = ::waitpid(rank.pid, &status, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR)) continue;
    rank.reaped = true;
    if (r < 0) continue;  // ECHILD: nothing left to learn about it
    if (const int left = remove_shm_leftovers(rank.pid); left > 0) {
      message("removed " + std::to_string(left) + " shared-memory segment(s) left in /dev/shm by rank " +
              std::to_string(rank.spec->global_rank) + " (pid " + std::to_string(rank.pid) + ")");
    }
    drain(rank);
    ExitStatus exit = ExitStatus::from_wait_status(status);
    if (exit.success() || decided_) continue;
    fail(rank, exit,
         "rank " + std::to_string(rank.spec->global_rank) + " (local_rank " +
             std::to_string(rank.spec->local_rank) + ", pid " + std::to_string(rank.pid) + ") " +
             exit.describe());
  }
}

void GroupRun::check_heartbeats() {
  if (options_.heartbeat_timeout_s <= 0 || stopping_) return;
  // The ranks that wait for a hung one in a collective stop beating too, at
  // about the same time. Named is a silent rank that is stopped (SIGSTOP,
  // state T in /proc), else the one silent longest.
  const auto now = std::chrono::system_clock::now();  // file times are wall-clock times
  LiveRank* silent_rank = nullptr;
  bool silent_stopped = false;
  double longest = 0;
  for (LiveRank& rank : ranks_) {
    if (rank.reaped || rank.spec->heartbeat_file.empty()) continue;
    struct stat st {};
    if (::stat(rank.spec->heartbeat_file.c_str(), &st) != 0) continue;  // no beat yet: still starting
    const auto beat = std::chrono::system_clock::time_point(std::chrono::duration_cast<
        std::chrono::system_clock::duration>(std::chrono::seconds(st.st_mtim.tv_sec) +
                                             std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    const double silent = std::chrono::duration<double>(now - beat).count();
    if (silent <= options_.heartbeat_timeout_s) continue;
    const bool stopped = process_stopped(rank.pid);
    if (silent_rank == nullptr || (stopped && !silent_stopped) || (stopped == silent_stopped && silent > longest)) {
      longest = silent;
      silent_rank = &rank;
      silent_stopped = stopped;
    }
  }
  if (silent_rank == nullptr) return;
  const LiveRank& rank = *silent_rank;
  std::ostringstream text;
  text << "rank " << rank.spec->global_rank << " (local_rank " << rank.spec->local_rank << ", pid " << rank.pid
       << ") made no progress for " << static_cast<int>(longest) << " s (no heartbeat within --heartbeat_timeout "
       << options_.heartbeat_timeout_s << "); "
       << (silent_stopped ? "it is stopped (SIGSTOP)" : "it is hung, or waiting for a rank that is");
  fail(rank, ExitStatus{1, 0}, text.str());
  for (const LiveRank& r : ranks_) {  // a SIGSTOPped rank acts on SIGTERM only once continued
    if (!r.reaped) signal_group(r.pid, SIGCONT, true);
  }
}

void GroupRun::check_hang() {
  if (options_.hang_timeout_s <= 0 || stopping_) return;
  const auto now = Clock::now();
  // Once a second at most: a few 40 KB reads per rank.
  if (now - last_hang_check_ < std::chrono::milliseconds(std::min(1000, static_cast<int>(options_.hang_timeout_s * 250)))) {
    return;
  }
  last_hang_check_ = now;
  std::vector<RankRecord> records;
  for (const LiveRank& rank : ranks_) {
    if (rank.reaped || rank.spec->flight_record.empty()) continue;
    RankRecord r;
    r.global_rank = rank.spec->global_rank;
    r.local_rank = rank.spec->local_rank;
    r.pid = rank.pid;
    r.stopped = process_stopped(rank.pid);
    read_flight_record(rank.spec->flight_record, r.record);
    records.push_back(std::move(r));
  }
  HangLimits limits;
  limits.wait_s = options_.hang_timeout_s;
  limits.long_activity_s = std::max(options_.hang_long_activity_s, options_.hang_timeout_s);
  const std::optional<HangVerdict> verdict = diagnose_hang(records, util::flight::now_ns(), limits);
  if (!verdict) return;
  const LiveRank* culprit = &ranks_.front();
  for (const LiveRank& rank : ranks_) {
    if (rank.spec->global_rank == verdict->culprit) culprit = &rank;
  }
  fail(*culprit, ExitStatus{1, 0},
       verdict->message + " (--hang_timeout " + seconds_text(options_.hang_timeout_s) + "; docs/DIAGNOSIS.md)");
  for (const LiveRank& r : ranks_) {  // a SIGSTOPped rank acts on SIGTERM only once continued
    if (!r.reaped) signal_group(r.pid, SIGCONT, true);
  }
}

bool GroupRun::read_once(RankStream& stream) {
  ssize_t n = ::read(stream.fd.get(), buffer_.data(), buffer_.size());
  if (n > 0) {
    stream.relay.feed(std::string_view(buffer_.data(), static_cast<std::size_t>(n)));
    return true;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  stream.relay.finish();  // end of file, or an error that ends the stream the same way
  stream.fd.reset();
  return false;
}

void GroupRun::drain(LiveRank& rank) {
  // Bounded, so a process that keeps writing cannot keep the loop from
  // handling signals; what a pipe buffers (64 KiB by default) fits easily.
  constexpr int kMaxReads = 16;
  for (RankStream* s : {&rank.out, &rank.err}) {
    for (int i = 0; i < kMaxReads && s->fd.valid() && read_once(*s); ++i) {
    }
  }
}

void GroupRun::begin_stop(int sig) {
  if (!stopping_) {
    stopping_ = true;
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(options_.grace_period_s));
  }
  signal_all(sig);
}

void GroupRun::kill_all() {
  std::string late;
  for (const LiveRank& rank : ranks_) {
    if (!rank.reaped) late += (late.empty() ? "" : ", ") + std::to_string(rank.spec->global_rank);
  }
  if (!late.empty()) message("sending SIGKILL to rank(s) " + late + " still running");
  killed_ = true;
  linger_deadline_ = Clock::now() + kSigkillLinger;
  signal_all(SIGKILL);
}

void GroupRun::signal_all(int sig) {
  // Skip reaped ranks whose pipes are closed: their groups are most likely
  // empty, and an empty group's id may be reused by an unrelated process.
  for (const LiveRank& rank : ranks_) {
    if (!rank.reaped || rank.pipes_open()) signal_group(rank.pid, sig, !rank.reaped);
  }
}

bool GroupRun::all_reaped() const {
  for (const LiveRank& rank : ranks_) {
    if (!rank.reaped) return false;
  }
  return true;
}

bool GroupRun::any_pipe_open() const {
  for (const LiveRank& rank : ranks_) {
    if (rank.pipes_open()) return true;
  }
  return false;
}

}  // namespace

Supervisor::Supervisor(SupervisorOptions options, SignalChannel& signals, const RankLogFiles& logs)
    : options_(options), signals_(signals), logs_(logs) {}

GroupOutcome Supervisor::run(const std::vector<RankSpec>& ranks, JobEvents* job) {
  GroupRun group(options_, signals_, logs_, job);
  return group.run(ranks);
}

}  // namespace paisoar::launch
