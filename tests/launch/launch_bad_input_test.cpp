// Process tests of what `paisoar launch` prints for bad input, through the
// real binary: every numeric flag outside its range, not finite or not a
// number is refused with exit 2 and a message naming the flag, the value and
// the range; so are unknown flags, a missing program or flag value, a
// --log_dir that cannot be written and more ranks than the open-file limit
// allows, before anything starts. A program that does not exist or cannot
// be run exits 127 or 126 with what to do.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHelpHint = " Run 'paisoar launch --help' for the flags.\n";

// `paisoar launch FLAGS... launch_probe print started` must exit 2 with
// "paisoar launch: WORDS" on stderr, start nothing and print nothing else.
void expect_refused(const std::vector<std::string>& flags, const std::string& words) {
  std::vector<std::string> args = {"launch"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {LAUNCH_PROBE, "print", "started"});
  RunResult r = run_paisoar(args);
  EXPECT_EQ(r.exit_code, 2) << flags.front() << ": " << r.err;
  EXPECT_EQ(r.err, "paisoar launch: " + words + kHelpHint) << flags.front();
  EXPECT_EQ(r.out, "") << flags.front();
}

std::string seconds_words(const std::string& flag, const std::string& value) {
  return flag + " must be a finite number of seconds from 0 to 604800 (7 days), got '" + value + "'.";
}

std::string positive_seconds_words(const std::string& flag, const std::string& value) {
  return flag + " must be a finite number of seconds more than 0 and at most 604800 (7 days), got '" +
         value + "'.";
}

std::string whole_words(const std::string& flag, int min, int max, const std::string& value) {
  return flag + " must be a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
         ", got '" + value + "'.";
}

// --grace_period inf once overflowed the SIGKILL deadline: the ranks were
// killed after 0.5 s.
TEST(LaunchBadInput, DurationsMustBeFiniteSecondsWithinTheirRange) {
  for (const char* v : {"inf", "1e10", "nan", "-1", "0x10", "five", "604801"})
    expect_refused({"--grace_period", v}, seconds_words("--grace_period", v));
  expect_refused({"--shutdown-timeout", "inf"}, seconds_words("--grace_period", "inf"));
  for (const char* flag : {"--heartbeat_timeout", "--hang_timeout"}) {
    for (const char* v : {"inf", "-0.5", "1e400", "nan", "thirty"}) {
      expect_refused({flag, v}, std::string(flag) +
                                    " must be a finite number of seconds from 0 (off) to 604800 "
                                    "(7 days), got '" + std::string(v) + "'.");
    }
  }
  for (const char* v : {"0", "inf", "-3"})
    expect_refused({"--join_timeout", v}, positive_seconds_words("--join_timeout", v));
  expect_refused({"--rdzv_conf", "join_timeout=inf"},
                 positive_seconds_words("--rdzv-conf join_timeout", "inf"));
  for (const char* v : {"0", "nan"})
    expect_refused({"--monitor_interval", v}, positive_seconds_words("--monitor_interval", v));
}

TEST(LaunchBadInput, CountsMustBeWholeNumbersWithinTheirRange) {
  for (const char* v : {"-1", "1e10", "2.5", "1000001", "many"})
    expect_refused({"--max_restarts", v}, whole_words("--max_restarts", 0, 1000000, v));
  for (const char* v : {"0", "-2", "4097", "99999999999", "1e3", "xpu"}) {
    std::string words = "--nproc_per_node must be a whole number from 1 to 4096, or auto, cpu or gpu, got '" +
                        std::string(v) + "'";
    if (std::string(v) == "xpu") words += " (Intel XPUs are not counted by paisoar launch; give a number)";
    expect_refused({"--nproc_per_node", v}, words + ".");
  }
  for (const char* v : {"0", "65537", "1e3"}) expect_refused({"--nnodes", v}, whole_words("--nnodes", 1, 65536, v));
  for (const char* v : {"-1", "x"}) expect_refused({"--node_rank", v}, whole_words("--node_rank", 0, 65535, v));
  expect_refused({"--nnodes", "2", "--node_rank", "2"},
                 "--node_rank must be a whole number from 0 to 1 for --nnodes 2, got '2'.");
  for (const char* v : {"0", "-3", "65537", "1e10"})
    expect_refused({"--omp_num_threads", v}, whole_words("--omp_num_threads", 1, 65536, v));
}

TEST(LaunchBadInput, PortsMustBeWithinTheirRange) {
  for (const char* v : {"-1", "70000", "99999999999", "http"})
    expect_refused({"--master_port", v}, whole_words("--master_port", 0, 65534, v));
  expect_refused({"--master_port", "65535"},
                 "--master_port must be a whole number from 0 to 65534, got '65535': the ranks get "
                 "MASTER_PORT = --master_port + 1 for stores they host themselves.");
  expect_refused({"--rdzv_endpoint", "node0:99999999999"},
                 "--rdzv-endpoint 'node0:99999999999': its port must be a whole number from 0 to "
                 "65535, got '99999999999'.");
}

TEST(LaunchBadInput, UnknownFlagsAndMissingValuesOrPrograms) {
  expect_refused({"--bogus"}, "unknown option '--bogus'. To run a program whose name starts with "
                              "'-', put '--' before it.");
  const std::string no_program =
      "paisoar launch: no program given. Name the program to run after the flags, e.g. 'paisoar "
      "launch --nproc_per_node 2 ./train --epochs 1'." + std::string(kHelpHint);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"launch"}, {"launch", "--nproc_per_node", "2"}, {"launch", "--"}}) {
    RunResult r = run_paisoar(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, no_program);
  }
  RunResult missing_value = run_paisoar({"launch", "--grace_period"});
  EXPECT_EQ(missing_value.exit_code, 2) << missing_value.err;
  EXPECT_EQ(missing_value.err, "paisoar launch: --grace_period: 1 required SECONDS missing." +
                                   std::string(kHelpHint));
}

// A program that cannot be started: nothing else runs, and the exit code is
// the shell's (127 not found, 126 cannot run).
void expect_not_started(const std::string& program, int code, const std::string& words) {
  RunResult r = run_paisoar({"launch", "--master_port", "0", "--nproc_per_node", "2", program});
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_NE(r.err.find("paisoar launch: cannot start '" + program + "': "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("paisoar launch: " + words + "\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("restarting"), std::string::npos) << r.err;
}

TEST(LaunchBadInput, ProgramsThatCannotRunAreNamedWithWhatToDo) {
  const fs::path dir = make_temp_dir();
  const std::string missing = (dir / "train").string();
  expect_not_started(missing, 127, "'" + missing + "' does not exist: check the program's path.");
  expect_not_started("paisoar-no-such-command", 127,
                     "'paisoar-no-such-command' was not found in PATH: give its path (e.g. "
                     "./paisoar-no-such-command), or add its directory to PATH.");
  const std::string data = (dir / "data.txt").string();
  std::ofstream(data) << "not a program\n";
  fs::permissions(data, fs::perms::owner_read | fs::perms::owner_write);
  expect_not_started(data, 126, "'" + data + "' is not executable: make it so (chmod +x " + data +
                                    "), or name its interpreter first (e.g. paisoar launch bash " +
                                    data + ").");
  expect_not_started(dir.string(), 126, "'" + dir.string() + "' is a directory, not a program.");
  // The Python that would run a script cannot be started.
  RunResult r = run_paisoar({"launch", "--master_port", "0", "train.py"},
                            {"PAISOAR_PYTHON=/nonexistent/bin/python"});
  EXPECT_EQ(r.exit_code, 127) << r.err;
  EXPECT_NE(r.err.find("paisoar launch: 'train.py' runs under Python '/nonexistent/bin/python' "
                       "($PAISOAR_PYTHON), which cannot be started. Set PAISOAR_PYTHON to the "
                       "Python interpreter of the environment where torch and paisoar are "
                       "installed"),
            std::string::npos)
      << r.err;
  fs::remove_all(dir);
}

// Exit 2 with exactly `err` on stderr, and no rank started.
void expect_refused_early(const RunResult& r, const std::string& err) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, err);
  EXPECT_EQ(r.out, "");
}

TEST(LaunchBadInput, ALogDirectoryThatCannotBeWrittenIsRefusedBeforeAnythingStarts) {
  const fs::path dir = make_temp_dir();
  std::ofstream(dir / "file") << "x";
  const std::string under_file = (dir / "file" / "logs").string();
  expect_refused_early(
      run_paisoar(probe_launch({"--log_dir", under_file}, {"print", "started"})),
      "paisoar launch: cannot create --log_dir '" + under_file +
          "': Not a directory. Pick a directory you can write to.\n");
  fs::create_directories(dir / "logs" / "rank_1.log");  // a directory where rank 1's file goes
  const std::string taken = (dir / "logs" / "rank_1.log").string();
  expect_refused_early(
      run_paisoar(probe_launch({"--nproc_per_node", "2", "--log_dir", (dir / "logs").string()},
                               {"print", "started"})),
      "paisoar launch: cannot open log file '" + taken +
          "': Is a directory. Pick a --log_dir you can write to.\n");
  fs::remove_all(dir);
}

// Rather than starting some ranks and failing at the next one with "Too many
// open files".
TEST(LaunchBadInput, MoreRanksThanTheOpenFileLimitAllowsAreRefusedUpFront) {
  std::string command = "ulimit -n 64 && exec '" + std::string(PAISOAR_BIN) + "'";
  for (const std::string& arg : probe_launch({"--nproc_per_node", "100"}, {"print", "started"}))
    command += " '" + arg + "'";
  LauncherRun run({"-c", command}, {}, "/bin/sh");
  RunResult r = run.finish();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("paisoar launch: --nproc_per_node 100 needs about 332 open files in the "
                       "launcher, more than its limit of 64 (ulimit -n). Raise the limit (e.g. "
                       "ulimit -n 332) or start fewer ranks per node."),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace paisoar::launch::testing
