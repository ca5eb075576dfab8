// any_rank: one decision shared by every rank (skip this step? stop?), so no
// rank goes on alone while another turns back and collectives fall out of step.
#pragma once

#include <memory>

namespace paisoar::comm {

class Communicator;

// True on every rank when `local` is true on at least one. A null or 1-rank
// communicator returns `local`. Collective: every rank of `comm` must call it.
bool any_rank(const std::shared_ptr<Communicator>& comm, bool local);

}  // namespace paisoar::comm
