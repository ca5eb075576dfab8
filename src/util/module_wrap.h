// Shared by the module wrappers (amp::Pinned, memory::Checkpointed) and the
// name-pattern rewrites that insert them (PrecisionPolicy::apply,
// CheckpointPolicy::apply): one way to make a wrapper transparent and one way
// to rewrite a Sequential's children.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>

#include <functional>
#include <optional>
#include <string>

namespace paisoar::detail {

// Registers `inner`'s own parameters, buffers and children on `wrapper` under
// their own names (shared, not copied), so the wrapper is invisible to
// state_dict keys, optimizers, to() and zero_grad(). Call from the wrapper's
// constructor. `inner` itself is not a child: the wrapper's train() override
// must forward to it (see forward_train).
void adopt_module_state(torch::nn::Module& wrapper, torch::nn::Module& inner);

// train(on) on the wrapper and on the wrapped module itself.
void forward_train(torch::nn::Module& wrapper, torch::nn::Module& inner, bool on);

// Given a child's dotted path (`prefix.name`) and the child, returns its
// replacement, or nullopt to keep it.
using ChildRewrite =
    std::function<std::optional<torch::nn::AnyModule>(const std::string& path,
                                                      const torch::nn::AnyModule& child)>;

// A new Sequential with `model`'s children, in order and under the same names,
// each one replaced where `rewrite` says so. Parameters stay shared with `model`.
torch::nn::Sequential rewrite_children(const torch::nn::Sequential& model, const std::string& prefix,
                                       const ChildRewrite& rewrite);

}  // namespace paisoar::detail
