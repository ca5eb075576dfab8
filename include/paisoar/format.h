// File formats, at the bottom of the dependency graph: named tensors with
// metadata (TensorFile), the safetensors codec Python reads and writes, and
// TensorBoard event files (EventWriter).
// No training knowledge lives here; checkpoint/ and zero/ build on it.
#pragma once

#include "paisoar/format/event_file.h"
#include "paisoar/format/safetensors.h"
#include "paisoar/format/tensor_file.h"
