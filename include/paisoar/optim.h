// paisoar's optimizers for large-batch training (torch::optim compatible).
#pragma once

#include "paisoar/optim/lamb.h"
#include "paisoar/optim/lars.h"
