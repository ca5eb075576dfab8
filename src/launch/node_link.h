// How the launchers of a multi-node job keep its nodes together, through node
// 0's rendezvous store (every launcher, node 0's included, is a client of it,
// with the job token). Job-wide values (first_value(): the flags every node
// must share, the run id) are /paisoar/launch/<name>. The job runs in
// generations; generation g's ranks get restart count g. For each
// generation, under /paisoar/launch/gen_<g>/:
//   node_<k>  node k joined (its host and pid; a second launcher with the same
//             --node_rank is an error)
//   joined    how many nodes joined; the one that makes it nnodes sets
//   start     "go": every node starts its ranks; or "end\n<why>" when a node
//             did not join within --join_timeout (whoever saw it first) or a
//             launcher got a signal while waiting
//   done_node_<k>, done
//             node k's ranks all succeeded, and how many nodes' did; the
//             one that makes it nnodes sets
//   stop      the generation's verdict, written once (compare-and-set, first
//             writer wins): "done" (every node succeeded), "restart\n<why>" (a
//             rank failed on some node: every node stops its ranks and joins
//             g + 1, while --max_restarts allows) or "end\n<why>" (a launcher
//             got a signal or could not start its program: every node ends).
// Each launcher holds a WAIT on `start` or `stop` on a second connection, so
// it learns of the others' verdict as soon as it is written. And it sets
// /paisoar/launch/alive/node_<k>, which the store deletes when that
// launcher's connection closes (store_state.h): a launcher waiting for the
// others to finish ends the job when one is gone before its ranks finished.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launch/job_events.h"
#include "launch/signal_channel.h"
#include "launch/rendezvous/store_client.h"

namespace paisoar::launch {

struct NodeLinkOptions {
  // The rendezvous store (node 0's --master_addr and --master_port).
  std::string host;
  int port = 0;
  std::string token;
  int node_rank = 0;
  int nnodes = 1;
  // How long join() waits for every node (--join_timeout); also how long the
  // constructor tries to reach the store.
  double join_timeout_s = 60.0;
};

// A generation's outcome, the same on every node (but kInterrupted).
struct JobVerdict {
  enum class Kind {
    kGo,           // every node joined: start the ranks
    kDone,         // every node's ranks succeeded: the job is complete
    kRestart,      // a rank failed somewhere (`reason`): restart, or give up
    kEnd,          // the job is over (`reason`)
    kInterrupted,  // this launcher got `signal` while waiting; the job was ended
  };
  Kind kind = Kind::kGo;
  std::string reason;
  int signal = 0;
};

// Not thread-safe: used by the launcher's main thread. Holds a reference to
// `signals` (a Ctrl-C while waiting for the other nodes ends the wait).
// Every method throws StoreConnectionLost when the store is gone.
class NodeLink : public JobEvents {
 public:
  // Connects (retrying for join_timeout_s while nothing listens yet); throws
  // std::runtime_error saying to start node 0's launcher when it cannot.
  NodeLink(NodeLinkOptions options, SignalChannel& signals);

  // The job-wide value `name` (under /paisoar/launch/): the first value any
  // launcher offered, which is `mine` when this one was first.
  std::string first_value(const std::string& name, const std::string& mine);

  // Joins generation `generation` and waits until every node has: kGo, kEnd
  // (a node did not join in time: "node 2 did not rejoin within 60 s
  // (--join_timeout)", or a launcher got a signal), or kInterrupted. Throws
  // std::runtime_error when another launcher already joined with this
  // --node_rank.
  JobVerdict join(int generation);

  // JobEvents, while this node's ranks of the joined generation run.
  int fd() const override;
  std::optional<std::string> take_stop_reason() override;
  void report_failure(const std::string& what) override;

  // This node's ranks all succeeded: waits for the generation's verdict
  // (kDone once every node's have, else kRestart, kEnd or kInterrupted).
  JobVerdict finish();
  // After this node's group stopped (its failure, or the job's word): the
  // generation's verdict, kRestart or kEnd.
  JobVerdict verdict();
  // Ends the job on every node, e.g. "node 1's launcher got SIGINT".
  void end_job(const std::string& why);

 private:
  std::string key(const std::string& name) const;
  // Node `node`'s presence: a key that goes when its launcher's connection does.
  std::string alive_key(int node) const;
  std::string node_name() const;
  // Waits for the outstanding WAIT's answer: returns kAnswered, or the
  // signal (not SIGCHLD) that came first, or 0 when `timeout_s` (> 0) passed
  // first; the WAIT is still outstanding then.
  static constexpr int kAnswered = -1;
  int await_watch(double timeout_s);
  void consume_watch();  // reads the answer to an outstanding WAIT whose key exists
  void watch(const std::string& name);
  JobVerdict parse(const std::string& value) const;
  // The nodes without a node_<k> key in this generation, and what to say of them.
  std::vector<int> missing_nodes() const;
  std::string missing_message(const std::vector<int>& missing) const;

  NodeLinkOptions options_;
  SignalChannel& signals_;
  std::unique_ptr<StoreClient> control_;  // requests answered at once
  std::unique_ptr<StoreClient> watch_;    // one WAIT at a time
  bool watch_pending_ = false;
  bool announced_ = false;  // this node's alive_key() is set
  int generation_ = -1;
  bool running_ = false;  // the generation started ("go"): verdicts go to `stop`
  std::optional<JobVerdict> verdict_;
};

}  // namespace paisoar::launch
