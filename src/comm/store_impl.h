// StoreImpl: the c10d store behind a paisoar::comm::Store handle.
#pragma once

#include "src/comm/c10d_compat.h"

namespace paisoar::comm::detail {

struct StoreImpl {
  C10dStorePtr store;
  int port = -1;
};

}  // namespace paisoar::comm::detail
