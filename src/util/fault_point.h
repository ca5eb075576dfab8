// Test-only fault injection: named points in the code (a checkpoint file
// created, written, synced, renamed; a training step done) where a test can
// make the process die as abruptly as a crash, an OOM kill or a power cut
// would, to check that what was on disk stays usable. Inert unless the edge
// (a test, or an app reading the environment) installs a FaultInjector.
// Points: see docs/CHECKPOINT.md and docs/TRAIN.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace paisoar::util {

// Called at every fault point; decides whether to fail there.
class FaultInjector {
 public:
  virtual ~FaultInjector() = default;
  virtual void reached(const char* point, int64_t index) = 0;
  // At a system call's fault point (atomic_file.open, .write, .fsync):
  // the errno it fails with instead of running, or 0 to let it run.
  virtual int error_at(const char* point, int64_t index) {
    (void)point;
    (void)index;
    return 0;
  }
};

// Makes the system call at `point` fail with `error` (ENOSPC, EIO) whenever
// its index is at least `from`, as a disk would that fills up or breaks:
// atomic_file.write's index is the size the file would reach with the
// write, atomic_file.fsync's the file's size. Needs no privileges, unlike a
// full tmpfs.
class FailAtPoint : public FaultInjector {
 public:
  FailAtPoint(std::string point, int error, int64_t from = 0);
  void reached(const char*, int64_t) override {}
  int error_at(const char* point, int64_t index) override;

 private:
  std::string point_;
  int error_;
  int64_t from_;
};

// Kills the process with SIGKILL at `point` (and `index`, when given):
// nothing can catch it or clean up after it.
class KillAtPoint : public FaultInjector {
 public:
  KillAtPoint(std::string point, std::optional<int64_t> index = std::nullopt);
  void reached(const char* point, int64_t index) override;

 private:
  std::string point_;
  std::optional<int64_t> index_;
};

// Stops the calling thread at `point` (and `index`, when given) for good, as
// a hung data loader, file system or deadlock would: the process stays alive
// and silent.
class StallAtPoint : public FaultInjector {
 public:
  StallAtPoint(std::string point, std::optional<int64_t> index = std::nullopt);
  void reached(const char* point, int64_t index) override;

 private:
  std::string point_;
  std::optional<int64_t> index_;
};

// The injector the environment asks for, or null:
//   PAISOAR_TEST_FAULT=<point>[:<index>]  the point to kill at, and the index
//   PAISOAR_TEST_FAULT=<point>[:<from>]=ENOSPC|EIO  the system call to fail (FailAtPoint)
//   PAISOAR_TEST_FAULT=<point>[:<index>]=STALL  the point to stop at for good (StallAtPoint)
//   PAISOAR_TEST_FAULT_RANK=<r>           only on the process whose RANK is r
// None after a restart (PAISOAR_RESTART_COUNT other than 0), so a relaunched
// job runs through. Throws c10::ValueError for a malformed index.
std::unique_ptr<FaultInjector> fault_injector_from_env(const std::map<std::string, std::string>& env);

// The process's injector (null: none). Installed once at the edge, before
// any thread that reaches a fault point starts; not changed while they run.
void install_fault_injector(std::unique_ptr<FaultInjector> injector);

// Asks the installed injector, if any; one pointer test otherwise.
void fault_point(const char* point, int64_t index);
// The errno the installed injector makes the system call at `point` fail
// with (0: none, and always 0 without an injector).
int fault_error(const char* point, int64_t index);

}  // namespace paisoar::util
