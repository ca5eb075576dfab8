// paisoar's gradient engine: the backward protocol DDP and ZeRO share
// (accumulator hooks, readiness per group, no_sync, unused parameters, the
// first error agreed across ranks), for owners of any list of parameters.
#pragma once

#include "paisoar/grad/gradient_engine.h"
#include "paisoar/grad/gradient_sink.h"
#include "paisoar/grad/no_sync.h"
