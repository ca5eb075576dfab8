// File formats, at the bottom of the dependency graph: named tensors with
// metadata (TensorFile) and the safetensors codec Python reads and writes.
// No training knowledge lives here; checkpoint/ and zero/ build on it.
#pragma once

#include "paisoar/format/safetensors.h"
#include "paisoar/format/tensor_file.h"
