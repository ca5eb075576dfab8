// StoreServeLoop: accept, authenticate, serve and refuse connections of the
// launcher's rendezvous store.
#include "launch/rendezvous/store_serve_loop.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <vector>

#include "launch/job_token.h"
#include "launch/output_relay.h"
#include "launch/rendezvous/store_server.h"

namespace paisoar::launch {
namespace {

using store::ConnId;
using store::DecodeStatus;
using store::Request;

// Beyond this many open connections, new ones are closed at once.
constexpr std::size_t kMaxConnections = 4096;
// Refusals logged before the launcher stops reporting them (a port scanner
// or a misconfigured script must not flood the job's output).
constexpr int kMaxRefusalsLogged = 20;
constexpr std::size_t kReadChunk = 64 * 1024;
// VALIDATE: the query-type byte and the uint32 magic.
constexpr std::size_t kValidateBytes = 5;

// Before authentication a request may hold nothing bigger than a token.
store::DecodeLimits first_request_limits() {
  store::DecodeLimits limits;
  limits.max_field_bytes = 4096;
  limits.max_keys = 0;
  return limits;
}

std::string peer_name(const sockaddr_storage& addr, socklen_t len) {
  char host[NI_MAXHOST] = {};
  char port[NI_MAXSERV] = {};
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof(host), port,
                    sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "an unknown address";
  const std::string h = host;
  return (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
}

}  // namespace

StoreServeLoop::StoreServeLoop(std::string token, int log_fd, int listen_fd, int stop_fd,
                               std::atomic<std::size_t>* open_connections)
    : token_(std::move(token)),
      log_fd_(log_fd),
      listen_fd_(listen_fd),
      stop_fd_(stop_fd),
      open_connections_(open_connections) {}

void StoreServeLoop::run() noexcept {
  try {
    loop();
  } catch (const std::exception& e) {
    log(std::string("the rendezvous store stopped: ") + e.what());
  }
}

void StoreServeLoop::loop() {
  std::vector<pollfd> fds;
  std::vector<ConnId> ids;
  for (;;) {
    // Out of descriptors: accept again once a connection has closed, instead
    // of waking up for the waiting connection over and over.
    fds.assign({{stop_fd_, POLLIN, 0}, {listen_fd_, accept_paused_ ? short{0} : short{POLLIN}, 0}});
    ids.clear();
    for (auto& [id, c] : conns_) {
      short events = c.close_when_sent ? 0 : POLLIN;
      if (!c.out.empty()) events |= POLLOUT;
      fds.push_back({c.fd.get(), events, 0});
      ids.push_back(id);
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
    if (fds[0].revents != 0) return;
    for (std::size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto it = conns_.find(ids[i - 2]);
      if (it == conns_.end()) continue;
      Connection& c = it->second;
      bool keep = true;
      if (fds[i].revents & POLLOUT) keep = flush(c);
      if (keep && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) && !c.close_when_sent)
        keep = on_readable(it->first, c);
      if (keep && (fds[i].revents & (POLLHUP | POLLERR)) && c.close_when_sent) keep = false;
      if (!keep || (c.close_when_sent && c.out.empty())) close(it->first);
    }
    if (fds[1].revents != 0) accept_new();
  }
}

void StoreServeLoop::accept_new() {
  for (;;) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    UniqueFd fd(::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len,
                          SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {  // EAGAIN (nothing more), an aborted connection, or out of descriptors
      accept_paused_ = errno == EMFILE || errno == ENFILE;
      return;
    }
    Connection c;
    c.peer = peer_name(addr, len);
    if (conns_.size() >= kMaxConnections) {
      refuse(c, "too many open connections");
      continue;  // fd closes here
    }
    const int one = 1;  // replies are small and answer a waiting client: no Nagle delay
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c.fd = std::move(fd);
    conns_.emplace(next_id_++, std::move(c));
    if (open_connections_ != nullptr) open_connections_->store(conns_.size());
  }
}

bool StoreServeLoop::on_readable(ConnId id, Connection& c) {
  char buf[kReadChunk];
  const ssize_t n = ::recv(c.fd.get(), buf, sizeof(buf), 0);
  if (n == 0) return false;  // closed by the peer
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  c.in.append(buf, static_cast<std::size_t>(n));
  return serve_requests(id, c);
}

bool StoreServeLoop::validate(Connection& c, std::size_t* used) {
  switch (store::classify_handshake(std::string_view(c.in).substr(*used))) {
    case store::Handshake::kIncomplete:
      return false;
    case store::Handshake::kValid:
      *used += kValidateBytes;
      c.stage = Connection::Stage::kValidated;
      return true;
    case store::Handshake::kOlderProtocol:
      refuse(c, "it speaks a TCPStore protocol older than LibTorch 2.x (no validation "
                "handshake); this launcher speaks 2.x's, so run the job's ranks with torch / "
                "LibTorch 2.x");
      return false;
    case store::Handshake::kNotTcpStore:
      refuse(c, "it is not a c10d TCPStore client (no LibTorch 2.x validation handshake)");
      return false;
  }
  return false;
}

bool StoreServeLoop::serve_requests(ConnId id, Connection& c) {
  static const store::DecodeLimits kServedLimits;
  using Stage = Connection::Stage;
  std::size_t used = 0;
  while (!c.close_when_sent && used < c.in.size()) {
    if (c.stage == Stage::kNew) {
      if (!validate(c, &used)) break;
      continue;
    }
    const bool authenticated = c.stage == Stage::kAuthenticated;
    Request request;
    std::size_t consumed = 0;
    const std::string_view rest = std::string_view(c.in).substr(used);
    const DecodeStatus status = store::decode_request(
        rest, authenticated ? kServedLimits : first_request_limits(), &request, &consumed);
    if (status == DecodeStatus::kIncomplete) break;
    const bool second_validate = status == DecodeStatus::kComplete &&
                                 request.type == store::QueryType::kValidate;
    if (status == DecodeStatus::kMalformed || second_validate) {
      if (!authenticated) {
        refuse(c, "its first request was not the job-token check");
        break;
      }
      log("closed a connection from " + c.peer + ": a request the store does not understand "
          "(query type " + std::to_string(static_cast<unsigned char>(rest[0])) +
          "; not c10d TCPStore's LibTorch 2.x protocol)");
      return false;
    }
    used += consumed;
    // PING (the client's liveness check after VALIDATE) is echoed at any stage.
    if (request.type == store::QueryType::kPing) {
      c.out += store::encode_ping_reply(request.word);
      continue;
    }
    if (!authenticated) {
      if (!authenticate(c, request)) break;
      continue;
    }
    store::ApplyResult result = state_.apply(id, request);
    for (store::Reply& reply : result.replies) {
      auto to = conns_.find(reply.to);
      if (to == conns_.end()) continue;
      to->second.out += reply.bytes;
      // Another connection woken by this write: send now; a broken one is
      // noticed (and closed) by its own poll events.
      if (to->first != id) flush(to->second);
    }
    if (result.close_sender) {
      c.close_when_sent = true;
      break;
    }
  }
  c.in.erase(0, used);
  return flush(c);
}

bool StoreServeLoop::authenticate(Connection& c, const Request& r) {
  const bool token_check = r.type == store::QueryType::kCompareSet && r.keys.size() == 1 &&
                           r.keys.front() == kAuthKey;
  if (!token_check) {
    refuse(c, "its first request was not the job-token check");
    return false;
  }
  if (!tokens_equal(r.value, token_)) {
    c.out += store::encode_bytes_reply("");  // an empty value: "refused"
    refuse(c, "wrong job token");
    return false;
  }
  c.stage = Connection::Stage::kAuthenticated;
  c.out += store::encode_bytes_reply(token_);
  return true;
}

void StoreServeLoop::refuse(Connection& c, const std::string& why) {
  c.close_when_sent = true;
  c.in.clear();
  if (refusals_logged_ < kMaxRefusalsLogged) {
    log("refused a connection from " + c.peer + ": " + why);
  } else if (refusals_logged_ == kMaxRefusalsLogged) {
    log("refused more connections; further refusals are not reported");
  }
  ++refusals_logged_;
}

bool StoreServeLoop::flush(Connection& c) {
  while (!c.out.empty()) {
    const ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.out.erase(0, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  return true;
}

void StoreServeLoop::close(ConnId id) {
  state_.drop(id);
  conns_.erase(id);
  if (open_connections_ != nullptr) open_connections_->store(conns_.size());
  accept_paused_ = false;
}

void StoreServeLoop::log(const std::string& text) { write_launcher_message(log_fd_, text); }

}  // namespace paisoar::launch
