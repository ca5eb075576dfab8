// GradientSink: what a GradientEngine's owner does with the gradients: where
// they live (DDP's buckets, ZeRO's units) and which collective averages a
// complete group. The engine decides when; the sink decides how.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <vector>

namespace paisoar::grad {

// Every method runs with the engine's mutex held, on the thread that ran the
// hook or the end-of-backward callback. A method that throws records this
// backward's error (agreed across ranks at its end) except where noted.
class GradientSink {
 public:
  virtual ~GradientSink() = default;

  // Makes parameter `param`'s gradient live in the sink's storage: a gradient
  // something else allocated is copied in, an undefined one is zero-filled.
  // Returns true when it created the gradient (it was undefined).
  virtual bool adopt(size_t param) = 0;

  // A synchronised backward: every gradient of `group` is in (or known
  // missing). The sink may launch its collective now (overlap), in its own
  // fixed order across ranks.
  virtual void group_ready(size_t group) = 0;
  // A local (no-sync) backward: every gradient of `group` is in.
  virtual void local_group_done(size_t /*group*/) {}

  // The end of a synchronised backward, every group ready: launch every
  // collective not launched yet. The engine then starts its agreement.
  virtual void launch_remaining() = 0;
  // Wait for every collective this backward launched, and keep the results.
  virtual void wait_all() = 0;
  // A backward an exception interrupted: wait for what it launched, so later
  // collectives pair up across ranks. Must not throw.
  virtual void drain() noexcept {}
  // GradientEngine::shadow_backward: issue the collectives of launch_remaining
  // (every group, this rank contributing nothing), then of wait_all, results
  // discarded. Owners that do not support joined ranks keep the default (throws).
  virtual void shadow_launch_all() { throw std::logic_error("this gradient owner does not support joined ranks"); }
  virtual void shadow_wait_all() {}

  // After the agreement: `param` got no gradient on any rank
  // (find_unused_parameters); `created` when this backward zero-filled it.
  virtual void unused_everywhere(size_t /*param*/, bool /*created*/) {}
  // After a synchronised backward every rank agreed on (no error):
  // `arrival` is this rank's order of gradients. May issue collectives (every
  // rank calls it) and may call GradientEngine::set_groups.
  virtual void synchronised(const std::vector<size_t>& /*arrival*/) {}
  // After any backward (synchronised or not, failed or not). Must not throw.
  virtual void end_backward(bool /*synchronised*/) noexcept {}
};

}  // namespace paisoar::grad
