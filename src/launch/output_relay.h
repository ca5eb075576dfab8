// Relays one rank's stdout or stderr to the launcher's, line by line: each
// line is written whole, prefixed "[rank<R>]: ", so lines of different ranks
// never mix mid-line. The same lines, unprefixed, can go to a log file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace paisoar::launch {

// Writes all of `data` to `fd`, retrying after EINTR and short writes.
// Returns false on any other error (errno says which, e.g. EPIPE).
bool write_all(int fd, std::string_view data);

// Writes "paisoar launch: <text>\n" to `fd` in one write, so the launcher's
// own messages never split a relayed line.
void write_launcher_message(int fd, std::string_view text);

// Not thread-safe: owned and driven by the supervisor's event loop. Does not
// own the descriptors it writes to.
class LineRelay {
 public:
  // A line longer than this is cut and relayed in pieces, bounding memory
  // when a program writes without newlines (progress bars using '\r').
  static constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;

  // `dest_fd` is the launcher's stdout or stderr, or -1 to keep the lines off
  // the console; `log_fd` a rank log file or -1.
  LineRelay(std::string prefix, int dest_fd, int log_fd);

  // Takes the next bytes read from the rank's pipe and writes out the lines
  // they complete; an unfinished line waits for more bytes or finish().
  void feed(std::string_view bytes);

  // Writes the unfinished last line, if any, ending it with '\n'. Call when
  // the pipe reaches end of file.
  void finish();

 private:
  void append_line(std::string_view line);
  void flush();

  std::string prefix_;
  int dest_fd_;
  int log_fd_;
  bool dest_broken_ = false;  // set after a failed write; later lines skip dest
  bool log_broken_ = false;
  std::string pending_;       // the unfinished line, without prefix
  std::string dest_buf_;      // whole lines ready for dest, prefixed
  std::string log_buf_;       // whole lines ready for the log, unprefixed
};

}  // namespace paisoar::launch
