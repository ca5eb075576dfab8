// paisoar's reference models, for the benchmarks, the tests and users' first
// runs: an MLP and a small CNN for 28x28 images, torchvision's ResNet-18/34/50
// and VGG-16, and a small GPT-style decoder-only transformer.
#pragma once

#include "paisoar/models/fashion_cnn.h"
#include "paisoar/models/gpt.h"
#include "paisoar/models/layer_sequence.h"
#include "paisoar/models/mlp.h"
#include "paisoar/models/resnet.h"
#include "paisoar/models/vgg.h"
