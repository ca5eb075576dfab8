// Precompiled header for every target that links LibTorch: parsing torch/torch.h
// once instead of per file is most of the build time on 2 cores.
#pragma once

#include <torch/torch.h>
