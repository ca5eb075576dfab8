// paisoar's hybrid parallelism: the data x pipeline x tensor layout and mesh,
// data parallelism across pipeline stages, and the tensor-replicated
// parameters a global gradient norm counts once. See docs/PARALLEL.md.
#pragma once

#include "paisoar/hybrid/hybrid_mesh.h"
#include "paisoar/hybrid/parallel_layout.h"
#include "paisoar/hybrid/replicated_parameters.h"
#include "paisoar/hybrid/stage_sync.h"
#include "paisoar/hybrid/tied_parameters.h"
