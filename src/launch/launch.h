// The entry point of `paisoar launch`, the torchrun-style launcher. It links
// no LibTorch, so bin/paisoar starts in milliseconds. See docs/LAUNCH.md.
#pragma once

namespace paisoar {

// Runs `paisoar launch`: argv[0] is the subcommand's name ("launch"), the rest
// are launcher flags, then the program and its arguments. Returns the exit
// code for the process: 0 when every rank succeeded; 2 for a bad command line;
// 128+N when the launcher was stopped by signal N; 127/126 when the program
// cannot be started; else the failed rank's exit code, or 1.
// REQUIRES: the process is single-threaded (signals are taken via signalfd).
int launch_main(int argc, char** argv);

}  // namespace paisoar
