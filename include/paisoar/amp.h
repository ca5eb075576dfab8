// paisoar's mixed precision: the autocast guard and the gradient scaler.
#pragma once

#include "paisoar/amp/autocast.h"
#include "paisoar/amp/grad_scaler.h"
#include "paisoar/amp/master_weights.h"
#include "paisoar/amp/custom_function.h"
#include "paisoar/amp/dtype_choice.h"
#include "paisoar/amp/finite_loss_check.h"
#include "paisoar/amp/precision.h"
#include "paisoar/amp/precision_regions.h"
#include "paisoar/amp/region_chain.h"
