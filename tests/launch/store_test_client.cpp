// StoreTestClient: blocking sends, poll()-bounded reads.
#include "store_test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>

#include "launch/output_relay.h"
#include "launch/rendezvous/store_server.h"

namespace paisoar::launch::testing {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

StoreTestClient::StoreTestClient(const std::string& host, int port) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(*v4);
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(*v6);
  } else {
    connect_errno_ = EINVAL;
    return;
  }
  UniqueFd fd(::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    connect_errno_ = errno;
    return;
  }
  fd_ = std::move(fd);
}

void StoreTestClient::send(const store::Request& request) {
  write_all(fd_.get(), store::encode_request(request));
}

void StoreTestClient::send_raw(const std::string& bytes) { write_all(fd_.get(), bytes); }

bool StoreTestClient::handshake() {
  store::Request validate;
  validate.type = store::QueryType::kValidate;
  validate.word = store::kValidationMagic;
  store::Request ping;
  ping.type = store::QueryType::kPing;
  ping.word = 0x5a17u;
  send_raw(store::encode_request(validate) + store::encode_request(ping));
  std::string echo;
  return read_exact(4, &echo) && echo == store::encode_ping_reply(ping.word);
}

bool StoreTestClient::join(const std::string& token) {
  if (!handshake()) return false;
  send_token(token);
  std::string answer;
  return read_bytes_reply(&answer) && answer == token;
}

void StoreTestClient::send_token(const std::string& token) {
  store::Request r;
  r.type = store::QueryType::kCompareSet;
  r.keys = {kAuthKey};
  r.value = token;
  r.desired = token;
  send(r);
}

bool StoreTestClient::read_exact(std::size_t n, std::string* out, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (buffered_.size() < n) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t got = ::recv(fd_.get(), buf, sizeof(buf), 0);
    if (got <= 0) return false;
    buffered_.append(buf, static_cast<std::size_t>(got));
  }
  *out = buffered_.substr(0, n);
  buffered_.erase(0, n);
  return true;
}

bool StoreTestClient::read_bytes_reply(std::string* value, double timeout_s) {
  std::string header;
  if (!read_exact(8, &header, timeout_s)) return false;
  return read_exact(static_cast<std::size_t>(store::read_u64(header)), value, timeout_s);
}

bool StoreTestClient::closed_by_server(double timeout_s) {
  if (!buffered_.empty()) return false;
  pollfd p{fd_.get(), POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout_s * 1000)) <= 0) return false;
  char c;
  return ::recv(fd_.get(), &c, 1, 0) <= 0;
}

}  // namespace paisoar::launch::testing
