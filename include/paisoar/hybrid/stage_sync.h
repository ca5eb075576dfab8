// Data parallelism across pipelines: a stage's gradients are averaged over
// the data group once per step, in the step's last backward (overlapped with
// it), while the micro-batches before it only accumulate locally: DDP's
// gradient accumulation, driven by the pipeline's schedule.
//
//   HybridMesh mesh(world, {.data = 2, .pipeline = 2});
//   Pipeline pipe(model, plan, mesh.pipeline_group(), loss_fn, {8});
//   ddp::GradientReducer reducer(pipe.module().ptr(), mesh.data_group());
//   sync_in_last_backward(pipe, reducer);
//   optimizer.zero_grad(); pipe.step(x, y); optimizer.step();
#pragma once

#include <functional>

#include "paisoar/ddp/gradient_reducer.h"
#include "paisoar/pipeline/pipeline.h"

namespace paisoar::hybrid {

// Sets `pipe`'s op hook: arm(false) before the step's first op, arm(true)
// before its last backward. arm must set the synchroniser's sync flag and
// prepare it for the coming backward (a GradientReducer: set_sync, then
// pre_forward; a ZeroOptimizer at stage 1 or 2: set_sync).
void sync_in_last_backward(pipeline::Pipeline& pipe, std::function<void(bool sync)> arm);

// The same with DDP's reducer over the stage's module and the data group.
// `reducer` must outlive the pipeline's steps.
void sync_in_last_backward(pipeline::Pipeline& pipe, ddp::GradientReducer& reducer);

}  // namespace paisoar::hybrid
