// Checkpoint and resume: training state (model, optimizer, RNG, metadata) to
// and from safetensors files (paisoar/format.h) Python can read, and a manager
// that saves every N steps, keeps the last K and resumes from the newest
// intact one.
#pragma once

#include "paisoar/checkpoint/checkpoint_manager.h"
#include "paisoar/checkpoint/file_manifest.h"
#include "paisoar/checkpoint/training_state.h"
#include "paisoar/format.h"
