// File formats, at the bottom of the dependency graph: named tensors with
// metadata (TensorFile), the safetensors codec Python reads and writes,
// TensorBoard event files (EventWriter), and the FileSystem the checkpoint
// files go through (local, in memory).
// No training knowledge lives here; checkpoint/ and zero/ build on it.
#pragma once

#include "paisoar/format/event_file.h"
#include "paisoar/format/file_system.h"
#include "paisoar/format/safetensors.h"
#include "paisoar/format/tensor_file.h"
