// paisoar's memory tools: activation checkpointing (whole modules, or picked
// by name pattern) and memory accounting (tracking CPU allocator, device
// statistics, per-rank reports).
#pragma once

#include "paisoar/memory/activation_checkpoint.h"
#include "paisoar/memory/activation_checkpoint_policy.h"
#include "paisoar/memory/activation_checkpoint_regions.h"
#include "paisoar/memory/device_memory.h"
#include "paisoar/memory/memory_report.h"
#include "paisoar/memory/tracking_allocator.h"
