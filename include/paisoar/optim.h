// paisoar's optimizers for large-batch training (torch::optim compatible),
// with LR schedules, gradient clipping by global norm, and any optimizer's
// state as named tensors for checkpoints.
#pragma once

#include "paisoar/optim/flat_buffer.h"
#include "paisoar/optim/flat_optimizer.h"
#include "paisoar/optim/grad_clip.h"
#include "paisoar/optim/lamb.h"
#include "paisoar/optim/lars.h"
#include "paisoar/optim/lr_schedule.h"
#include "paisoar/optim/optimizer_state.h"
