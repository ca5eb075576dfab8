// Activation checkpointing: a custom autograd Function whose inputs are the
// segment's input and its parameters. Forward runs the segment under no_grad;
// backward recomputes it under the recorded RNG/autocast state and takes the
// gradients of the recomputed graph with autograd::grad (which accumulates
// nothing), then hands them to the outer graph like any other node's.
#include "paisoar/memory/activation_checkpoint.h"

#include <c10/util/Exception.h>
#include <c10/util/Type.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <unordered_set>

#include "src/memory/forward_state.h"
#include "src/util/module_wrap.h"

namespace paisoar::memory {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char* kSegment = "paisoar.checkpoint.segment";

// What backward needs besides the saved tensors; held by the context.
struct Segment : torch::CustomClassHolder {
  SegmentFn fn;
  detail::ForwardState state;
};

// Throws if the recomputed graph reaches a leaf requiring grad that is neither
// the input nor a listed parameter: autograd::grad would silently drop its gradient.
void check_all_leaves_listed(const torch::Tensor& out, const std::vector<torch::Tensor>& listed) {
  std::unordered_set<const c10::TensorImpl*> known;
  for (const auto& t : listed) known.insert(t.unsafeGetTensorImpl());
  std::unordered_set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> stack;
  if (out.grad_fn()) stack.push_back(out.grad_fn().get());
  while (!stack.empty()) {
    auto* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    if (auto* acc = dynamic_cast<torch::autograd::AccumulateGrad*>(node)) {
      const auto& v = acc->variable;
      TORCH_CHECK(known.count(v.unsafeGetTensorImpl()) != 0,
                  "checkpoint: the checkpointed function uses a tensor that requires grad (shape ",
                  v.sizes(), ", ", v.scalar_type(),
                  ") but is not in its parameter list, so its gradient would be lost; pass all "
                  "parameters the function uses (module->parameters()), or use checkpointed(module, x)");
      continue;
    }
    for (const auto& edge : node->next_edges()) {
      if (edge.function) stack.push_back(edge.function.get());
    }
  }
}

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  static torch::Tensor forward(AutogradContext* ctx, c10::intrusive_ptr<Segment> segment,
                               const torch::Tensor& x, at::TensorList params) {
    // Apply runs this under no_grad: the segment builds no graph, so its
    // activations are freed as soon as the next op has consumed them.
    torch::Tensor out = segment->fn(x);
    std::vector<torch::Tensor> saved{x};
    saved.insert(saved.end(), params.begin(), params.end());
    ctx->save_for_backward(saved);  // version counters catch in-place changes before backward
    ctx->saved_data[kSegment] = c10::IValue::make_capsule(std::move(segment));
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto segment = c10::static_intrusive_pointer_cast<Segment>(ctx->saved_data.at(kSegment).toCapsule());
    const variable_list saved = ctx->get_saved_variables();
    const size_t num_params = saved.size() - 1;

    torch::Tensor x = saved[0].detach();
    x.requires_grad_(ctx->needs_input_grad(0) && x.is_floating_point());
    std::vector<torch::Tensor> inputs;
    std::vector<size_t> slots;  // inputs[k] is the gradient for forward input slots[k]
    if (x.requires_grad()) {
      inputs.push_back(x);
      slots.push_back(0);
    }
    for (size_t i = 0; i < num_params; ++i) {
      if (!ctx->needs_input_grad(i + 1)) continue;
      inputs.push_back(saved[i + 1]);
      slots.push_back(i + 1);
    }

    torch::Tensor out;
    {
      detail::ReplayGuard replay(segment->state);
      torch::AutoGradMode grad(true);
      out = segment->fn(x);
    }
    // Slot 0 is the Segment (not a tensor), then x, then the parameters.
    variable_list result(2 + num_params);
    if (inputs.empty() || !out.requires_grad()) return result;
    std::vector<torch::Tensor> listed(saved.begin(), saved.end());
    listed[0] = x;
    check_all_leaves_listed(out, listed);
    const auto grads = torch::autograd::grad({out}, inputs, {grad_outputs[0]},
                                             /*retain_graph=*/false, /*create_graph=*/false,
                                             /*allow_unused=*/true);
    for (size_t k = 0; k < grads.size(); ++k) result[1 + slots[k]] = grads[k];
    return result;
  }
};

std::string module_name(const torch::nn::AnyModule& module) {
  return module.ptr()->name();
}

}  // namespace

torch::Tensor checkpoint(const SegmentFn& fn, const torch::Tensor& x, std::vector<torch::Tensor> params,
                         const ActivationCheckpointOptions& options) {
  TORCH_CHECK(fn, "checkpoint: no function to run");
  TORCH_CHECK(x.defined(), "checkpoint: the input tensor is undefined");
  std::vector<torch::Tensor> trainable;
  for (auto& p : params) {
    if (p.defined() && p.requires_grad()) trainable.push_back(std::move(p));
  }
  const bool needs_graph = torch::GradMode::is_enabled() && (x.requires_grad() || !trainable.empty());
  if (!needs_graph) return fn(x);  // nothing to recompute for: plain forward
  auto segment = c10::make_intrusive<Segment>();
  segment->fn = fn;
  segment->state = detail::ForwardState::capture(x, options.preserve_rng_state);
  return CheckpointFunction::apply(std::move(segment), x, at::TensorList(trainable));
}

CheckpointedImpl::CheckpointedImpl(torch::nn::AnyModule module, ActivationCheckpointOptions options)
    : module_(std::move(module)), options_(options) {
  TORCH_CHECK(!module_.is_empty(), "Checkpointed needs a module to wrap");
  paisoar::detail::adopt_module_state(*this, *module_.ptr());
}

torch::Tensor CheckpointedImpl::forward(torch::Tensor x) {
  torch::nn::AnyModule module = module_;  // shallow: shares the wrapped module
  SegmentFn fn = [module](const torch::Tensor& in) mutable -> torch::Tensor {
    torch::nn::AnyValue out = [&] {
      try {
        return module.any_forward(in);
      } catch (const c10::Error& e) {
        C10_THROW_ERROR(Error, c10::str("Checkpointed(", module_name(module),
                                        "): the wrapped module's forward must take a single tensor: ",
                                        e.what_without_backtrace()));
      }
    }();
    const torch::Tensor* t = out.try_get<torch::Tensor>();
    TORCH_CHECK(t != nullptr, "Checkpointed(", module_name(module),
                "): the wrapped module's forward returns ", c10::demangle(out.type_info().name()),
                ", not a tensor; activation checkpointing wraps modules with forward(Tensor) -> Tensor "
                "(checkpoint the part of the model that has such a forward)");
    return *t;
  };
  return checkpoint(fn, x, module_.ptr()->parameters(), options_);
}

void CheckpointedImpl::train(bool on) { paisoar::detail::forward_train(*this, *module_.ptr(), on); }

void CheckpointedImpl::pretty_print(std::ostream& stream) const {
  stream << "paisoar::memory::Checkpointed(";
  module_.ptr()->pretty_print(stream);
  stream << ")";
}

}  // namespace paisoar::memory
