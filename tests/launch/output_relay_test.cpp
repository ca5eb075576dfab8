// LineRelay: lines are reassembled across reads, prefixed, written whole,
// copied unprefixed to the log, and an unfinished last line is flushed.
#include "launch/output_relay.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include "launch/unique_fd.h"

namespace paisoar::launch {
namespace {

// An in-memory file to relay into.
class MemFile {
 public:
  MemFile() : fd_(memfd_create("relay_test", MFD_CLOEXEC)) {}
  int fd() const { return fd_.get(); }
  std::string contents() const {
    std::string out;
    char buf[4096];
    off_t at = 0;
    for (ssize_t n; (n = pread(fd_.get(), buf, sizeof(buf), at)) > 0; at += n) out.append(buf, n);
    return out;
  }

 private:
  UniqueFd fd_;
};

TEST(LineRelay, ReassemblesLinesSplitAcrossReads) {
  MemFile dest, log;
  LineRelay relay("[rank3]: ", dest.fd(), log.fd());
  relay.feed("hel");
  EXPECT_EQ(dest.contents(), "");
  relay.feed("lo\nwor");
  relay.feed("ld\n\nlast");
  EXPECT_EQ(dest.contents(), "[rank3]: hello\n[rank3]: world\n[rank3]: \n");
  relay.finish();
  EXPECT_EQ(dest.contents(), "[rank3]: hello\n[rank3]: world\n[rank3]: \n[rank3]: last\n");
  EXPECT_EQ(log.contents(), "hello\nworld\n\nlast\n");
  relay.finish();  // nothing pending: writes nothing
  EXPECT_EQ(log.contents(), "hello\nworld\n\nlast\n");
}

TEST(LineRelay, NoPrefixAndNoLog) {
  MemFile dest;
  LineRelay relay("", dest.fd(), -1);
  relay.feed("a\nb\n");
  EXPECT_EQ(dest.contents(), "a\nb\n");
}

TEST(LineRelay, CutsOverlongLines) {
  MemFile dest;
  LineRelay relay("> ", dest.fd(), -1);
  std::string longer(LineRelay::kMaxLineBytes + 10, 'x');
  relay.feed(longer.substr(0, 1000));
  relay.feed(longer.substr(1000));
  relay.feed("\n");
  std::string expected = "> " + std::string(LineRelay::kMaxLineBytes, 'x') + "\n> " +
                         std::string(10, 'x') + "\n";
  EXPECT_EQ(dest.contents(), expected);
}

TEST(LineRelay, MessagesAreOneLine) {
  MemFile dest;
  write_launcher_message(dest.fd(), "rank 1 exited with code 3");
  EXPECT_EQ(dest.contents(), "paisoar launch: rank 1 exited with code 3\n");
}

}  // namespace
}  // namespace paisoar::launch
