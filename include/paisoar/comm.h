// paisoar's communication layer: process groups, asynchronous collectives,
// rendezvous stores, environment detection and device meshes.
#pragma once

#include "paisoar/comm/agreement.h"
#include "paisoar/comm/communicator.h"
#include "paisoar/comm/device_mesh.h"
#include "paisoar/comm/env.h"
#include "paisoar/comm/progress_board.h"
#include "paisoar/comm/store.h"
#include "paisoar/comm/types.h"
#include "paisoar/comm/work.h"
