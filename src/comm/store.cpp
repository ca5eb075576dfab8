// Store: c10d TCPStore/HashStore/PrefixStore behind a small value type, and
// the client side of the launcher store's job-token check.
#include "paisoar/comm/store.h"
#include "paisoar/error.h"

#include <c10/util/Exception.h>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <stdexcept>

#include "src/comm/store_impl.h"

namespace paisoar::comm {

Store::Store(std::shared_ptr<detail::StoreImpl> impl) : impl_(std::move(impl)) {}

Store Store::hash() {
  auto impl = std::make_shared<detail::StoreImpl>();
  impl->store = c10::make_intrusive<::c10d::HashStore>();
  return Store(impl);
}

namespace {

c10::intrusive_ptr<::c10d::TCPStore> make_tcp(const std::string& host, int port, bool is_server,
                                              int world_size, std::chrono::milliseconds timeout) {
  ::c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = is_server;
  opts.numWorkers = static_cast<std::size_t>(world_size);
  opts.waitWorkers = false;
  opts.timeout = timeout;
  return c10::make_intrusive<::c10d::TCPStore>(host, opts);
}

}  // namespace

Store Store::tcp(const std::string& host, int port, bool is_server, int world_size,
                 std::chrono::milliseconds timeout) {
  if (port < 0 || port > 65535 || (port == 0 && !is_server)) {
    C10_THROW_ERROR(ValueError, "store port " + std::to_string(port) +
                                " is not valid: use 1-65535 (0 only on the server)");
  }
  auto impl = std::make_shared<detail::StoreImpl>();
  c10::intrusive_ptr<::c10d::TCPStore> tcp;
  try {
    tcp = make_tcp(host, port, is_server, world_size, timeout);
  } catch (const std::exception& e) {
    C10_THROW_ERROR(Error, 
        std::string(is_server ? "could not start the rendezvous store on "
                              : "could not reach the rendezvous store at ") +
        host + ":" + std::to_string(port) + ": " + error_text(e) +
        (is_server ? "\n  is the port already in use? pick another with --master_port "
                     "(0 picks a free one on a single node)"
                   : "\n  check MASTER_ADDR/MASTER_PORT and that rank 0 is running"));
  }
  impl->port = tcp->getPort();
  impl->host = host;
  impl->store = tcp;
  return Store(impl);
}

Store Store::launcher(const std::string& host, int port, const std::string& token,
                      std::chrono::milliseconds timeout) {
  const std::string where = host + ":" + std::to_string(port);
  if (port < 1 || port > 65535) {
    C10_THROW_ERROR(ValueError, "launcher store port " + std::to_string(port) +
                                " is not valid: use 1-65535");
  }
  c10::intrusive_ptr<::c10d::TCPStore> tcp;
  try {
    tcp = make_tcp(host, port, false, 1, timeout);
  } catch (const std::exception& e) {
    C10_THROW_ERROR(Error, "could not reach the launcher's rendezvous store at " + where +
                             ": " + error_text(e) +
                             "\n  PAISOAR_STORE_ADDR/PAISOAR_STORE_PORT name the store of the "
                             "`paisoar launch` that started this process; is it still running?");
  }
  // The first request on the connection: the store's token check (c10d puts
  // "/" before the key). A right token is answered with itself, a wrong one
  // with an empty value, and the store closes the connection.
  const std::vector<uint8_t> bytes(token.begin(), token.end());
  std::vector<uint8_t> answer;
  try {
    answer = tcp->compareSet("paisoar/auth", bytes, bytes);
  } catch (const std::exception& e) {
    C10_THROW_ERROR(Error, "the rendezvous store at " + where +
                             " closed the connection during the job-token check (" + error_text(e) +
                             "); is PAISOAR_STORE_PORT the port of a `paisoar launch` store?");
  }
  if (answer != bytes) {
    C10_THROW_ERROR(Error, "the rendezvous store refused this process: PAISOAR_JOB_TOKEN does "
                             "not match the job's (store at " + where + ").\n  Start ranks with "
                             "`paisoar launch`, or export the job's PAISOAR_JOB_TOKEN.");
  }
  auto impl = std::make_shared<detail::StoreImpl>();
  impl->port = port;
  impl->host = host;
  impl->store = tcp;
  return Store(impl);
}

void Store::set(const std::string& key, const std::string& value) const {
  impl_->store->set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

std::string Store::get(const std::string& key) const {
  auto bytes = impl_->store->get(key);
  return std::string(bytes.begin(), bytes.end());
}

int64_t Store::add(const std::string& key, int64_t delta) const { return impl_->store->add(key, delta); }

bool Store::check(const std::vector<std::string>& keys) const { return impl_->store->check(keys); }

void Store::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) const {
  impl_->store->wait(keys, timeout);
}

int Store::port() const { return impl_->port; }

Store Store::with_prefix(const std::string& prefix) const {
  auto impl = std::make_shared<detail::StoreImpl>();
  impl->store = c10::make_intrusive<::c10d::PrefixStore>(prefix, impl_->store);
  impl->port = impl_->port;
  impl->host = impl_->host;
  return Store(impl);
}

}  // namespace paisoar::comm
