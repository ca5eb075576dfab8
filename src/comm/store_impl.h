// StoreImpl: the c10d store behind a paisoar::comm::Store handle.
#pragma once

#include <string>

#include "src/comm/c10d_types.h"

namespace paisoar::comm::detail {

struct StoreImpl {
  C10dStorePtr store;
  int port = -1;
  std::string host;  // of a TCP store: where Gloo finds the route to bind to
};

}  // namespace paisoar::comm::detail
