// paisoar's reference models: a small CNN for 28x28 images and torchvision's
// ResNet-18, for the benchmarks, the tests and users' first runs.
#pragma once

#include "paisoar/models/fashion_cnn.h"
#include "paisoar/models/resnet.h"
