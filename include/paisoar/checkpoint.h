// Checkpoint and resume: safetensors files Python can read, training state
// (model, optimizer, RNG, metadata) to and from them, and a manager that saves
// every N steps, keeps the last K and resumes from the newest intact one.
#pragma once

#include "paisoar/checkpoint/checkpoint_content.h"
#include "paisoar/checkpoint/checkpoint_manager.h"
#include "paisoar/checkpoint/optimizer_state.h"
#include "paisoar/checkpoint/safetensors.h"
#include "paisoar/checkpoint/training_state.h"
