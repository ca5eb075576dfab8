// What each rank holds of the training state (placements): derived once from
// the layout, read by every part of a run.
#pragma once

#include "paisoar/layout/placements.h"
