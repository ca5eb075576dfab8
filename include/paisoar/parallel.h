// paisoar's hybrid parallelism: the data x pipeline x tensor layout and mesh,
// data parallelism across pipeline stages, and the tensor-replicated
// parameters a global gradient norm counts once. See docs/PARALLEL.md.
#pragma once

#include "paisoar/parallel/hybrid_mesh.h"
#include "paisoar/parallel/parallel_layout.h"
#include "paisoar/parallel/replicated_parameters.h"
#include "paisoar/parallel/stage_sync.h"
