// paisoar's config-driven training: the Trainer, its YAML config and schema,
// the run environment the edge reads, and the zoo of reference tasks.
#pragma once

#include "paisoar/train/config_schema.h"
#include "paisoar/train/device_choice.h"
#include "paisoar/train/model_state_layout.h"
#include "paisoar/train/run_environment.h"
#include "paisoar/train/train_config.h"
#include "paisoar/train/trainer.h"
#include "paisoar/train/zoo.h"
