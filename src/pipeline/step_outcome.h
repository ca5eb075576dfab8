// The end of every pipeline step: one allgather tells every stage whether any
// stage failed (then the first failed rank's error text follows) and the last
// stage's loss. A failure in stage 0's last backward reaches no other stage
// through the pipeline itself, so this agreement is what makes every rank
// throw, never some.
#pragma once

#include <string>

#include "paisoar/comm/communicator.h"

namespace paisoar::pipeline::detail {

struct StepOutcome {
  bool failed = false;
  std::string error;  // the lowest failed rank's text
  int failed_rank = -1;
  double loss = 0;    // the last rank's `loss`
};

// Collective over `group`. `error` is "" when this stage succeeded.
StepOutcome agree_on_outcome(comm::Communicator& group, const std::string& error, double loss);

}  // namespace paisoar::pipeline::detail
