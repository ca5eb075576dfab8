// paisoar's mixed precision: the autocast guard and the gradient scaler.
#pragma once

#include "paisoar/amp/autocast.h"
#include "paisoar/amp/grad_scaler.h"
#include "paisoar/amp/master_weights.h"
