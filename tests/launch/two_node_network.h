// Test helper: two network namespaces joined by a veth pair, standing in for
// two nodes on one machine (ip(8) from iproute2; needs root). Node k's
// namespace has only its loopback and its end of the pair, with address
// 10.77.0.<k+1>/24, so a job run in them can only use those addresses.
// Everything is removed by the destructor, processes still running in the
// namespaces included, so a failing test leaves nothing behind.
#pragma once

#include <string>
#include <vector>

namespace paisoar::launch::testing {

class TwoNodeNetwork {
 public:
  // Sets up both namespaces; when that is not permitted (not root, no
  // CAP_SYS_ADMIN, no ip), ok() is false and why() says what failed.
  TwoNodeNetwork();
  ~TwoNodeNetwork();
  TwoNodeNetwork(const TwoNodeNetwork&) = delete;
  TwoNodeNetwork& operator=(const TwoNodeNetwork&) = delete;

  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }

  // The namespace's name and the address of node `node` (0 or 1).
  const std::string& name(int node) const { return names_[node]; }
  std::string address(int node) const { return "10.77.0." + std::to_string(node + 1); }

  // The ip(8) binary and the argv prefix that runs a program in node `node`'s
  // namespace: {"netns", "exec", NAME} (ip execs the program in place, so
  // its pid is the program's).
  const std::string& ip() const { return ip_; }
  std::vector<std::string> exec_in(int node) const { return {"netns", "exec", names_[node]}; }

 private:
  // Runs `ip args`; false with why_ set when it fails.
  bool run(const std::string& args);
  void remove();

  std::string ip_;
  std::string names_[2];
  std::string veth_[2];
  bool ok_ = false;
  std::string why_;
};

}  // namespace paisoar::launch::testing
