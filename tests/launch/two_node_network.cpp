// TwoNodeNetwork: `ip netns add`, a veth pair across, addresses, links up;
// teardown kills what runs inside and deletes the namespaces.
#include "two_node_network.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace paisoar::launch::testing {
namespace {

std::string find_ip() {
  for (const char* path : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

// Runs a shell command; its exit status, and its output in *out.
int shell(const std::string& command, std::string* out) {
  std::FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[512];
  out->clear();
  while (std::fgets(buf, sizeof(buf), pipe) != nullptr) out->append(buf);
  return ::pclose(pipe);
}

}  // namespace

TwoNodeNetwork::TwoNodeNetwork() : ip_(find_ip()) {
  const std::string id = std::to_string(::getpid() % 100000);
  for (int node = 0; node < 2; ++node) {
    names_[node] = "paisoar_test_" + id + "_" + std::to_string(node);
    veth_[node] = "psr" + id + (node == 0 ? "a" : "b");  // at most 15 characters
  }
  if (ip_.empty()) {
    why_ = "no ip(8) found (Debian: apt-get install iproute2)";
    return;
  }
  remove();  // left over from an earlier run that was killed
  ok_ = run("netns add " + names_[0]) && run("netns add " + names_[1]) &&
        run("link add " + veth_[0] + " netns " + names_[0] + " type veth peer name " + veth_[1] + " netns " +
            names_[1]);
  for (int node = 0; ok_ && node < 2; ++node) {
    const std::string in = "-n " + names_[node] + " ";
    ok_ = run(in + "addr add " + address(node) + "/24 dev " + veth_[node]) && run(in + "link set lo up") &&
          run(in + "link set " + veth_[node] + " up");
  }
}

TwoNodeNetwork::~TwoNodeNetwork() { remove(); }

bool TwoNodeNetwork::run(const std::string& args) {
  std::string out;
  if (shell("'" + ip_ + "' " + args, &out) == 0) return true;
  why_ = "'ip " + args + "' failed: " + out;
  return false;
}

void TwoNodeNetwork::remove() {
  std::string out;
  for (const std::string& name : names_) {
    if (shell("'" + ip_ + "' netns pids " + name, &out) == 0) {
      std::istringstream pids(out);
      for (int pid = 0; pids >> pid;) ::kill(pid, SIGKILL);
    }
    shell("'" + ip_ + "' netns delete " + name, &out);  // takes its end of the pair with it
  }
}

}  // namespace paisoar::launch::testing
