// paisoar's optimizers for large-batch training (torch::optim compatible),
// with LR schedules and gradient clipping by global norm.
#pragma once

#include "paisoar/optim/flat_buffer.h"
#include "paisoar/optim/flat_optimizer.h"
#include "paisoar/optim/grad_clip.h"
#include "paisoar/optim/lamb.h"
#include "paisoar/optim/lars.h"
#include "paisoar/optim/lr_schedule.h"
