// Store: the key-value rendezvous that ranks use to find each other (c10d's
// TCPStore across processes, HashStore for ranks as threads in one process).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace paisoar::comm {

namespace detail {
struct StoreImpl;
}

// A cheap, copyable handle; copies share one store (so its methods are const). Thread-safe.
class Store {
 public:
  // In-process store for running N ranks as threads (tests).
  static Store hash();
  // TCP store at host:port. The server (rank 0) binds host:port (port 0 picks a
  // free one, see port()); clients retry until `timeout`.
  static Store tcp(const std::string& host, int port, bool is_server, int world_size,
                   std::chrono::milliseconds timeout);
  // A client of the rendezvous store `paisoar launch` hosts at host:port,
  // which serves a connection only after it showed the job token: this sends
  // it first. Throws c10::Error "the rendezvous store refused this
  // process: PAISOAR_JOB_TOKEN does not match the job's ..." on a wrong token,
  // and a message naming host:port when the store cannot be reached in `timeout`.
  static Store launcher(const std::string& host, int port, const std::string& token,
                        std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::string& value) const;
  // Blocks until the key exists (up to the store's timeout).
  std::string get(const std::string& key) const;
  int64_t add(const std::string& key, int64_t delta) const;
  bool check(const std::vector<std::string>& keys) const;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) const;
  // The bound port of a TCP store (useful when it was created with port 0); -1 otherwise.
  int port() const;
  // A view of this store in which every key is prefixed with `prefix` + "/".
  Store with_prefix(const std::string& prefix) const;

  std::shared_ptr<detail::StoreImpl> impl() const { return impl_; }
  // A handle over a store made elsewhere (a torch.distributed group's); internal.
  static Store over(std::shared_ptr<detail::StoreImpl> impl) { return Store(std::move(impl)); }

 private:
  explicit Store(std::shared_ptr<detail::StoreImpl> impl);
  std::shared_ptr<detail::StoreImpl> impl_;
};

}  // namespace paisoar::comm
