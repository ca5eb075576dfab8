// paisoar's ZeRO (stages 1-3): sharded optimizer state, gradients and
// parameters across data-parallel ranks, sharded checkpoints, memory accounting.
#pragma once

#include "paisoar/zero/gather_regions.h"
#include "paisoar/zero/layer_list.h"
#include "paisoar/zero/memory_bytes.h"
#include "paisoar/zero/options.h"
#include "paisoar/zero/shard_layout.h"
#include "paisoar/zero/sharded_checkpoint.h"
#include "paisoar/zero/zero_optimizer.h"
