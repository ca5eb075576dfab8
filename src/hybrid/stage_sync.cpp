// sync_in_last_backward: which op of a stage's schedule arms the data-parallel
// averaging (both schedules end every stage with the last micro-batch's backward).
#include "paisoar/hybrid/stage_sync.h"

#include <c10/util/Exception.h>

namespace paisoar::hybrid {

void sync_in_last_backward(pipeline::Pipeline& pipe, std::function<void(bool sync)> arm) {
  TORCH_CHECK(arm, "sync_in_last_backward: the arm function is empty");
  const auto& ops = pipe.ops();
  size_t last_backward = ops.size();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].type == pipeline::PipelineOp::Type::Backward) last_backward = i;
  }
  TORCH_CHECK(last_backward < ops.size(), "sync_in_last_backward: the stage's schedule has no backward");
  pipe.set_op_hook([arm = std::move(arm), last_backward](const pipeline::PipelineOp&, size_t index) {
    if (index == 0) arm(false);
    if (index == last_backward) arm(true);
  });
}

void sync_in_last_backward(pipeline::Pipeline& pipe, ddp::GradientReducer& reducer) {
  sync_in_last_backward(pipe, [&reducer](bool sync) {
    reducer.set_sync(sync);
    if (sync) {
      reducer.prepare_backward();  // the buffers were synced before the step's first forward
    } else {
      reducer.pre_forward();
    }
  });
}

}  // namespace paisoar::hybrid
