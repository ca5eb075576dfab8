// A pipeline stage's module: the slice of a Sequential that a partition plan
// gives one stage, either cut from a model every rank built whole or built
// layer by layer, so that a rank only ever creates its own layers.
#pragma once

#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>

#include <functional>

#include "paisoar/models/layer_sequence.h"
#include "paisoar/pipeline/partition.h"

namespace paisoar::pipeline {

// Layers [plan.stages[stage].begin, .end) of `model`, sharing its modules (and
// so its parameters) and keeping the children's names ("3.weight" stays
// "3.weight"). Throws c10::Error when the plan does not cover model->size()
// layers or `stage` is out of range.
torch::nn::Sequential stage_module(const torch::nn::Sequential& model, const PartitionPlan& plan,
                                   int stage);

// Layers [plan.stages[stage].begin, .end) of `model` as one module keeping
// the model's parameter names. Throws c10::Error when the plan does not cover
// model.size() layers or `stage` is out of range.
models::LayerRange stage_part(const models::LayerSequence& model, const PartitionPlan& plan, int stage);

// Releases the memory of every parameter and buffer of `model` that `stage`
// does not use (other stages' layers), keeping their shapes: a rank that built
// the whole model keeps only its stage's. Those tensors must not be read
// afterwards (their storage is 0 bytes: storage().nbytes() == 0).
void release_other_stages(const models::LayerSequence& model, const models::LayerRange& stage);

// make_layer(i) builds layer i of the whole model; only this stage's are built.
using LayerFactory = std::function<torch::nn::AnyModule(int layer)>;
torch::nn::Sequential build_stage(const LayerFactory& make_layer, const PartitionPlan& plan, int stage);

}  // namespace paisoar::pipeline
