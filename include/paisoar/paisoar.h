// paisoar: training acceleration for LibTorch. Include this for everything.
#pragma once

#include "paisoar/amp.h"
#include "paisoar/checkpoint.h"
#include "paisoar/comm.h"
#include "paisoar/data.h"
#include "paisoar/ddp.h"
#include "paisoar/grad.h"
#include "paisoar/hybrid.h"
#include "paisoar/memory.h"
#include "paisoar/models.h"
#include "paisoar/optim.h"
#include "paisoar/pipeline.h"
#include "paisoar/profiler.h"
#include "paisoar/tensor_parallel.h"
#include "paisoar/train.h"
#include "paisoar/version.h"
#include "paisoar/zero.h"
