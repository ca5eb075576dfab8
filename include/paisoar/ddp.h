// paisoar's data parallelism: DistributedDataParallel, its gradient reducer
// and the communication (compression) hooks.
#pragma once

#include "paisoar/ddp/bucket_span.h"
#include "paisoar/ddp/comm_hook.h"
#include "paisoar/ddp/distributed_data_parallel.h"
#include "paisoar/ddp/gradient_reducer.h"
#include "paisoar/ddp/options.h"
#include "paisoar/ddp/sync_batch_norm.h"
