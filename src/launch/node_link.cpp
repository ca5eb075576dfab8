// NodeLink: the join barrier, the verdicts and the watch of a multi-node job
// over the rendezvous store (keys in node_link.h).
#include "launch/node_link.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "launch/rank_process.h"
#include "launch/rendezvous/store_state.h"

namespace paisoar::launch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kGo = "go";
constexpr const char* kDone = "done";
constexpr const char* kRestart = "restart\n";
constexpr const char* kEnd = "end\n";

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

std::string format_seconds(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

}  // namespace

NodeLink::NodeLink(NodeLinkOptions options, SignalChannel& signals)
    : options_(std::move(options)), signals_(signals) {
  const auto deadline = Clock::now() + seconds(options_.join_timeout_s);
  try {
    control_ = std::make_unique<StoreClient>(options_.host, options_.port, options_.token, deadline);
    watch_ = std::make_unique<StoreClient>(options_.host, options_.port, options_.token, deadline);
  } catch (const StoreConnectionLost& e) {
    throw std::runtime_error("paisoar launch: cannot join the job: " + std::string(e.what()) +
                             ". Node 0's launcher hosts it: start it with --node_rank 0 and the same "
                             "--master_addr and --master_port, within --join_timeout (" +
                             format_seconds(options_.join_timeout_s) + " s) of the other nodes");
  }
}

std::string NodeLink::first_value(const std::string& name, const std::string& mine) {
  return control_->compare_set("/paisoar/launch/" + name, "", mine);
}

std::string NodeLink::key(const std::string& name) const {
  return "/paisoar/launch/gen_" + std::to_string(generation_) + "/" + name;
}

std::string NodeLink::node_name() const { return "node " + std::to_string(options_.node_rank); }

JobVerdict NodeLink::join(int generation) {
  consume_watch();
  generation_ = generation;
  running_ = false;
  verdict_.reset();
  const std::string me = host_name() + " pid " + std::to_string(::getpid());
  const std::string mine = key("node_" + std::to_string(options_.node_rank));
  const std::string holder = control_->compare_set(mine, "", me);
  if (holder != me) {
    throw std::runtime_error("paisoar launch: another launcher (" + holder + ") already joined this job as " +
                             node_name() + "; give every node its own --node_rank");
  }
  if (!announced_) {  // after the check above: a second launcher as node k must not take k's key
    control_->set(alive_key(options_.node_rank), me);
    announced_ = true;
  }
  if (control_->add(key("joined"), 1) == options_.nnodes) control_->compare_set(key("start"), "", kGo);
  watch("start");
  int woke = await_watch(options_.join_timeout_s);
  std::vector<int> missing = woke == 0 ? missing_nodes() : std::vector<int>{};
  // Every node's key is there: the last one is between its key and its count.
  for (int extra = 0; woke == 0 && missing.empty() && extra < 50; ++extra) {
    woke = await_watch(0.1);
    missing = woke == 0 ? missing_nodes() : std::vector<int>{};
  }
  std::string start;
  if (woke == kAnswered) {
    start = control_->get(key("start"));
  } else if (woke > 0) {
    start = control_->compare_set(key("start"), "", kEnd + node_name() + "'s launcher got " + signal_name(woke));
    consume_watch();
    if (start == kGo) {
      running_ = true;
      end_job(node_name() + "'s launcher got " + signal_name(woke));
    }
    JobVerdict v;
    v.kind = JobVerdict::Kind::kInterrupted;
    v.signal = woke;
    return v;
  } else {
    start = control_->compare_set(key("start"), "", kEnd + missing_message(missing));
    consume_watch();
  }
  if (start != kGo) return parse(start);
  running_ = true;
  watch("stop");
  JobVerdict go;
  go.kind = JobVerdict::Kind::kGo;
  return go;
}

std::vector<int> NodeLink::missing_nodes() const {
  std::vector<int> missing;
  for (int node = 0; node < options_.nnodes; ++node) {
    if (!control_->check({key("node_" + std::to_string(node))})) missing.push_back(node);
  }
  return missing;
}

std::string NodeLink::missing_message(const std::vector<int>& missing) const {
  std::string who;
  for (std::size_t i = 0; i < missing.size(); ++i) {
    who += i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ";
    who += std::to_string(missing[i]);
  }
  if (missing.empty()) who.push_back('?');  // only after the grace in join(): a node that never counted itself
  return std::string(missing.size() > 1 ? "nodes " : "node ") + who +
         (generation_ == 0 ? " did not join" : " did not rejoin") + " within " +
         format_seconds(options_.join_timeout_s) + " s (--join_timeout)";
}

int NodeLink::fd() const { return watch_->fd(); }

std::optional<std::string> NodeLink::take_stop_reason() {
  if (!watch_pending_ || !watch_->wait_ready()) return std::nullopt;
  watch_pending_ = false;
  verdict_ = parse(control_->get(key("stop")));
  return verdict_->reason.empty() ? "the job ended" : verdict_->reason;
}

void NodeLink::report_failure(const std::string& what) {
  verdict_ = parse(control_->compare_set(key("stop"), "", kRestart + node_name() + " failed: " + what));
}

std::string NodeLink::alive_key(int node) const {
  return std::string(store::kConnectionKeyPrefix) + "node_" + std::to_string(node);
}

JobVerdict NodeLink::finish() {
  control_->set(key("done_node_" + std::to_string(options_.node_rank)), "1");
  if (control_->add(key("done"), 1) == options_.nnodes) control_->compare_set(key("stop"), "", kDone);
  // A node whose launcher is gone (its connection closed: killed, or its
  // machine down) before its ranks finished would keep this wait from ever
  // ending: look for one every second.
  int woke = 0;
  while ((woke = await_watch(1.0)) == 0) {
    for (int node = 0; node < options_.nnodes; ++node) {
      if (control_->check({key("done_node_" + std::to_string(node))}) || control_->check({alive_key(node)}))
        continue;
      end_job("node " + std::to_string(node) + "'s launcher is gone (its connection to the store closed) " +
              "before its ranks finished");
      return verdict();
    }
  }
  if (woke > 0) {
    end_job(node_name() + "'s launcher got " + signal_name(woke));
    JobVerdict v;
    v.kind = JobVerdict::Kind::kInterrupted;
    v.signal = woke;
    return v;
  }
  return verdict();
}

JobVerdict NodeLink::verdict() {
  if (!verdict_) {
    consume_watch();  // `stop` was written: by this node, or the one that stopped it
    verdict_ = parse(control_->get(key("stop")));
  }
  consume_watch();
  return *verdict_;
}

void NodeLink::end_job(const std::string& why) {
  const std::string& name = running_ ? "stop" : "start";
  verdict_ = parse(control_->compare_set(key(name), "", kEnd + why));
}

void NodeLink::watch(const std::string& name) {
  consume_watch();
  watch_->wait_async({key(name)});
  watch_pending_ = true;
}

void NodeLink::consume_watch() {
  if (!watch_pending_) return;
  // The key exists by now, so the answer is on its way; a store that sends
  // none within the client's reply timeout is lost.
  if (!watch_->wait_ready(std::chrono::milliseconds(30000)))
    throw StoreConnectionLost("the rendezvous store at " + watch_->where() + " did not answer a WAIT");
  watch_pending_ = false;
}

int NodeLink::await_watch(double timeout_s) {
  if (!watch_pending_) return kAnswered;
  const auto deadline = Clock::now() + seconds(timeout_s);
  for (;;) {
    pollfd fds[2] = {{watch_->fd(), POLLIN, 0}, {signals_.fd(), POLLIN, 0}};
    int timeout_ms = -1;
    if (timeout_s > 0) {
      const double left = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
      if (left <= 0) return 0;
      timeout_ms = static_cast<int>(std::ceil(left));
    }
    if (::poll(fds, 2, timeout_ms) < 0) continue;  // EINTR
    if (fds[1].revents != 0) {
      for (int sig : signals_.drain()) {
        if (sig != SIGCHLD) return sig;
      }
    }
    if (fds[0].revents != 0 && watch_->wait_ready()) {
      watch_pending_ = false;
      return kAnswered;
    }
  }
}

JobVerdict NodeLink::parse(const std::string& value) const {
  JobVerdict v;
  const auto rest = [&](const char* prefix) { return value.substr(std::char_traits<char>::length(prefix)); };
  if (value == kGo) {
    v.kind = JobVerdict::Kind::kGo;
  } else if (value == kDone) {
    v.kind = JobVerdict::Kind::kDone;
  } else if (value.rfind(kRestart, 0) == 0) {
    v.kind = JobVerdict::Kind::kRestart;
    v.reason = rest(kRestart);
  } else {
    v.kind = JobVerdict::Kind::kEnd;
    v.reason = value.rfind(kEnd, 0) == 0 ? rest(kEnd) : "the job's state in the store is not understood: '" + value + "'";
  }
  return v;
}

}  // namespace paisoar::launch
