// LineRelay: splits a byte stream into lines and writes them whole.
#include "launch/output_relay.h"

#include <unistd.h>

#include <cerrno>

namespace paisoar::launch {

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void write_launcher_message(int fd, std::string_view text) {
  std::string line = "paisoar launch: ";
  line.append(text);
  line.push_back('\n');
  write_all(fd, line);
}

LineRelay::LineRelay(std::string prefix, int dest_fd, int log_fd)
    : prefix_(std::move(prefix)), dest_fd_(dest_fd), log_fd_(log_fd) {}

void LineRelay::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    std::size_t nl = bytes.find('\n');
    std::string_view piece = bytes.substr(0, nl);
    std::size_t room = kMaxLineBytes - pending_.size();
    if (piece.size() > room || (nl == std::string_view::npos && piece.size() == room)) {
      // The line got too long: relay what we have as a line of its own.
      pending_.append(piece.substr(0, room));
      append_line(pending_);
      pending_.clear();
      bytes.remove_prefix(room);
      continue;
    }
    if (nl == std::string_view::npos) {
      pending_.append(piece);
      break;
    }
    if (pending_.empty()) {
      append_line(piece);
    } else {
      pending_.append(piece);
      append_line(pending_);
      pending_.clear();
    }
    bytes.remove_prefix(nl + 1);
  }
  flush();
}

void LineRelay::finish() {
  if (!pending_.empty()) {
    append_line(pending_);
    pending_.clear();
  }
  flush();
}

void LineRelay::append_line(std::string_view line) {
  if (dest_fd_ >= 0 && !dest_broken_) {
    dest_buf_.append(prefix_);
    dest_buf_.append(line);
    dest_buf_.push_back('\n');
  }
  if (log_fd_ >= 0 && !log_broken_) {
    log_buf_.append(line);
    log_buf_.push_back('\n');
  }
}

void LineRelay::flush() {
  // One write per batch of whole lines: the launcher is single-threaded, so
  // nothing else writes to dest in between.
  if (!dest_buf_.empty() && !write_all(dest_fd_, dest_buf_)) dest_broken_ = true;
  if (!log_buf_.empty() && !write_all(log_fd_, log_buf_)) log_broken_ = true;
  dest_buf_.clear();
  log_buf_.clear();
}

}  // namespace paisoar::launch
