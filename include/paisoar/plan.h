// paisoar's planner: the layouts a config can take (layout_choice), what
// collectives cost here (comm_costs), a layout's step time and peak on paper
// (step_model), the ranking (planner) and `parallel: auto` (auto_layout).
#pragma once

#include "paisoar/plan/auto_layout.h"
#include "paisoar/plan/comm_costs.h"
#include "paisoar/plan/layout_choice.h"
#include "paisoar/plan/planner.h"
#include "paisoar/plan/step_model.h"
