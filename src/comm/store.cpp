// Store: c10d TCPStore/HashStore/PrefixStore behind a small value type.
#include "paisoar/comm/store.h"

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

Store Store::tcp(const std::string& host, int port, bool is_server, int world_size,
                 std::chrono::milliseconds timeout) {
  if (port < 0 || port > 65535 || (port == 0 && !is_server)) {
    throw std::invalid_argument("store port " + std::to_string(port) +
                                " is not valid: use 1-65535 (0 only on the server)");
  }
  ::c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = is_server;
  opts.numWorkers = static_cast<std::size_t>(world_size);
  opts.waitWorkers = false;
  opts.timeout = timeout;
  auto impl = std::make_shared<detail::StoreImpl>();
  c10::intrusive_ptr<::c10d::TCPStore> tcp;
  try {
    tcp = c10::make_intrusive<::c10d::TCPStore>(host, opts);
  } catch (const std::exception& e) {
    throw std::runtime_error(
        std::string(is_server ? "could not start the rendezvous store on "
                              : "could not reach the rendezvous store at ") +
        host + ":" + std::to_string(port) + ": " + e.what() +
        (is_server ? "\n  is the port already in use? pick another with --master_port "
                     "(0 picks a free one on a single node)"
                   : "\n  check MASTER_ADDR/MASTER_PORT and that rank 0 is running"));
  }
  impl->port = tcp->getPort();
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
