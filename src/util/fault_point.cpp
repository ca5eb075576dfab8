// Fault points: the installed injector, KillAtPoint (SIGKILL, which nothing
// can catch or clean up after), FailAtPoint (a system call's errno), and the
// environment's spec parsed at the edge.
#include "src/util/fault_point.h"

#include <c10/util/Exception.h>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace paisoar::util {
namespace {

std::unique_ptr<FaultInjector>& installed() {
  static std::unique_ptr<FaultInjector> injector;
  return injector;
}

const std::string* find(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

}  // namespace

KillAtPoint::KillAtPoint(std::string point, std::optional<int64_t> index)
    : point_(std::move(point)), index_(index) {}

void KillAtPoint::reached(const char* point, int64_t index) {
  if (point_ != point || (index_ && *index_ != index)) return;
  ::kill(::getpid(), SIGKILL);
  ::pause();  // SIGKILL is delivered before kill() returns; never reached
}

StallAtPoint::StallAtPoint(std::string point, std::optional<int64_t> index)
    : point_(std::move(point)), index_(index) {}

void StallAtPoint::reached(const char* point, int64_t index) {
  if (point_ != point || (index_ && *index_ != index)) return;
  while (true) ::pause();  // signals are handled; the thread never goes on
}

FailAtPoint::FailAtPoint(std::string point, int error, int64_t from)
    : point_(std::move(point)), error_(error), from_(from) {}

int FailAtPoint::error_at(const char* point, int64_t index) {
  return point_ == point && index >= from_ ? error_ : 0;
}

std::unique_ptr<FaultInjector> fault_injector_from_env(const std::map<std::string, std::string>& env) {
  const std::string* full_spec = find(env, "PAISOAR_TEST_FAULT");
  if (!full_spec || full_spec->empty()) return nullptr;
  const size_t equals = full_spec->find('=');
  const std::string spec_text = full_spec->substr(0, equals);
  const std::string* spec = &spec_text;
  int error = 0;
  bool stall = false;
  if (equals != std::string::npos) {
    const std::string name = full_spec->substr(equals + 1);
    if (name == "ENOSPC") error = ENOSPC;
    if (name == "EIO") error = EIO;
    stall = name == "STALL";
    if (error == 0 && !stall) {
      C10_THROW_ERROR(ValueError,
                      "PAISOAR_TEST_FAULT='" + *full_spec + "': what follows '=' must be ENOSPC, EIO or STALL");
    }
  }
  const std::string* restart = find(env, "PAISOAR_RESTART_COUNT");
  if (restart && *restart != "0") return nullptr;
  const std::string* rank = find(env, "PAISOAR_TEST_FAULT_RANK");
  const std::string* my_rank = find(env, "RANK");
  if (rank && (!my_rank || *rank != *my_rank)) return nullptr;
  const size_t colon = spec->find(':');
  std::optional<int64_t> index;
  if (colon != std::string::npos) {
    const std::string text = spec->substr(colon + 1);
    size_t used = 0;
    try {
      index = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size()) {
      C10_THROW_ERROR(ValueError, "PAISOAR_TEST_FAULT='" + *spec + "': the index after ':' must be an integer");
    }
  }
  if (error != 0) return std::make_unique<FailAtPoint>(spec->substr(0, colon), error, index.value_or(0));
  if (stall) return std::make_unique<StallAtPoint>(spec->substr(0, colon), index);
  return std::make_unique<KillAtPoint>(spec->substr(0, colon), index);
}

void install_fault_injector(std::unique_ptr<FaultInjector> injector) { installed() = std::move(injector); }

void fault_point(const char* point, int64_t index) {
  if (FaultInjector* injector = installed().get()) injector->reached(point, index);
}

int fault_error(const char* point, int64_t index) {
  FaultInjector* injector = installed().get();
  return injector ? injector->error_at(point, index) : 0;
}

}  // namespace paisoar::util
