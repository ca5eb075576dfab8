// StoreClient: connect with retries, token check, requests answered within
// a deadline, and an asynchronous WAIT.
#include "launch/rendezvous/store_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "launch/rendezvous/store_server.h"

namespace paisoar::launch {
namespace {

using Clock = StoreClient::Clock;

int ms_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 60000));
}

// One non-blocking connect to `a`, bounded by `deadline`; an invalid fd and
// `error` set when it did not work.
UniqueFd connect_once(const addrinfo* a, Clock::time_point deadline, std::string* error) {
  UniqueFd sock(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                         a->ai_protocol));
  if (!sock) {
    *error = std::strerror(errno);
    return {};
  }
  if (::connect(sock.get(), a->ai_addr, a->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      *error = std::strerror(errno);
      return {};
    }
    pollfd p{sock.get(), POLLOUT, 0};
    if (::poll(&p, 1, ms_until(deadline)) <= 0) {
      *error = "connection timed out";
      return {};
    }
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    ::getsockopt(sock.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error != 0) {
      *error = std::strerror(so_error);
      return {};
    }
  }
  const int one = 1;
  ::setsockopt(sock.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return sock;
}

}  // namespace

StoreClient::StoreClient(const std::string& host, int port, const std::string& token,
                         Clock::time_point deadline)
    : where_((host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
             std::to_string(port)) {
  std::string error = "nothing tried";
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
      error = gai_strerror(rc);
    } else {
      for (addrinfo* a = found; a != nullptr && !fd_; a = a->ai_next)
        fd_ = connect_once(a, deadline, &error);
      ::freeaddrinfo(found);
    }
    if (fd_ || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, ms_until(deadline))));
  }
  if (!fd_) lost("cannot connect (" + error + ")");
  handshake();
  if (compare_set(kAuthKey, token, token) != token)
    lost("the store refused this launcher's job token: export the same PAISOAR_JOB_TOKEN on "
         "every node");
}

void StoreClient::handshake() {
  store::Request validate;
  validate.type = store::QueryType::kValidate;
  validate.word = store::kValidationMagic;
  send(validate);
  store::Request ping;
  ping.type = store::QueryType::kPing;
  ping.word = static_cast<std::uint32_t>(::getpid());
  send(ping);
  if (store::read_u32(read_exact(4, Clock::now() + reply_timeout_)) != ping.word)
    lost("it answered the handshake's PING wrongly: it is not a LibTorch 2.x TCPStore");
}

void StoreClient::set(const std::string& key, const std::string& value) {
  store::Request r;
  r.type = store::QueryType::kSet;
  r.keys = {key};
  r.value = value;
  send(r);  // c10d's SET has no answer
}

std::string StoreClient::get(const std::string& key) {
  store::Request r;
  r.type = store::QueryType::kGet;
  r.keys = {key};
  send(r);
  return read_bytes_reply();
}

std::string StoreClient::compare_set(const std::string& key, const std::string& expected,
                                     const std::string& desired) {
  store::Request r;
  r.type = store::QueryType::kCompareSet;
  r.keys = {key};
  r.value = expected;
  r.desired = desired;
  send(r);
  return read_bytes_reply();
}

std::int64_t StoreClient::add(const std::string& key, std::int64_t delta) {
  store::Request r;
  r.type = store::QueryType::kAdd;
  r.keys = {key};
  r.delta = delta;
  send(r);
  return read_int_reply();
}

bool StoreClient::check(const std::vector<std::string>& keys) {
  store::Request r;
  r.type = store::QueryType::kCheck;
  r.keys = keys;
  send(r);
  const std::string reply = read_exact(1, Clock::now() + reply_timeout_);
  return reply[0] == static_cast<char>(store::CheckReply::kReady);
}

void StoreClient::wait_async(const std::vector<std::string>& keys) {
  store::Request r;
  r.type = store::QueryType::kWait;
  r.keys = keys;
  send(r);
}

bool StoreClient::wait_ready(std::chrono::milliseconds block_for) {
  if (buffered_.empty()) {
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(block_for.count())) <= 0) return false;
  }
  read_exact(1, Clock::now() + reply_timeout_);  // readable: the byte, or the hang-up
  return true;
}

void StoreClient::send(const store::Request& request) {
  const std::string bytes = store::encode_request(request);
  const auto deadline = Clock::now() + reply_timeout_;
  for (std::size_t sent = 0; sent < bytes.size();) {
    // MSG_NOSIGNAL: a store that went away is an error here, not a SIGPIPE.
    const ssize_t n = ::send(fd_.get(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd_.get(), POLLOUT, 0};
      if (::poll(&p, 1, ms_until(deadline)) == 0) lost("it takes no requests");
    } else if (!(n < 0 && errno == EINTR)) {
      lost(std::string("sending failed (") + std::strerror(errno) + ")");
    }
  }
}

std::string StoreClient::read_exact(std::size_t n, Clock::time_point deadline) {
  while (buffered_.size() < n) {
    pollfd p{fd_.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, ms_until(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0 && Clock::now() >= deadline) lost("no answer within the time allowed");
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t got = ::recv(fd_.get(), buf, sizeof(buf), 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got == 0) lost("the store closed the connection");
    if (got < 0) lost(std::string("reading failed (") + std::strerror(errno) + ")");
    buffered_.append(buf, static_cast<std::size_t>(got));
  }
  std::string out = buffered_.substr(0, n);
  buffered_.erase(0, n);
  return out;
}

std::string StoreClient::read_bytes_reply() {
  const auto deadline = Clock::now() + reply_timeout_;
  const std::string header = read_exact(8, deadline);
  const std::uint64_t n = store::read_u64(header);
  if (n > (std::uint64_t{1} << 30)) lost("a malformed answer");
  return read_exact(static_cast<std::size_t>(n), deadline);
}

std::int64_t StoreClient::read_int_reply() {
  return static_cast<std::int64_t>(store::read_u64(read_exact(8, Clock::now() + reply_timeout_)));
}

void StoreClient::lost(const std::string& why) const {
  throw StoreConnectionLost("the rendezvous store at " + where_ + ": " + why);
}

}  // namespace paisoar::launch
