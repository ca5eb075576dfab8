// paisoar's pipeline parallelism: per-layer costs and profiling, the exact
// partitioner, GPipe and 1F1B schedules, the Pipeline executor and its bubble.
#pragma once

#include "paisoar/pipeline/bubble.h"
#include "paisoar/pipeline/layer_cost.h"
#include "paisoar/pipeline/partition.h"
#include "paisoar/pipeline/pipeline.h"
#include "paisoar/pipeline/plan_broadcast.h"
#include "paisoar/pipeline/schedule.h"
#include "paisoar/pipeline/schedule_sim.h"
#include "paisoar/pipeline/stage_builder.h"
