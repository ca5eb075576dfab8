// The transparent-wrapper registration and the Sequential child rewrite.
#include "src/util/module_wrap.h"

namespace paisoar::detail {

void adopt_module_state(torch::nn::Module& wrapper, torch::nn::Module& inner) {
  for (const auto& p : inner.named_parameters(/*recurse=*/false)) {
    wrapper.register_parameter(p.key(), p.value(), p.value().requires_grad());
  }
  for (const auto& b : inner.named_buffers(/*recurse=*/false)) wrapper.register_buffer(b.key(), b.value());
  for (const auto& c : inner.named_children()) wrapper.register_module(c.key(), c.value());
}

void forward_train(torch::nn::Module& wrapper, torch::nn::Module& inner, bool on) {
  wrapper.torch::nn::Module::train(on);
  inner.train(on);  // the wrapped module itself is not one of the wrapper's children
}

torch::nn::Sequential rewrite_children(const torch::nn::Sequential& model, const std::string& prefix,
                                       const ChildRewrite& rewrite) {
  torch::nn::Sequential out;
  const auto children = model->named_children();
  TORCH_INTERNAL_ASSERT(children.size() == model->size());
  for (size_t i = 0; i < model->size(); ++i) {
    const std::string& name = children[i].key();
    const std::string path = prefix.empty() ? name : prefix + "." + name;
    const torch::nn::AnyModule& child = model->begin()[i];
    auto replacement = rewrite(path, child);
    out->push_back(name, replacement ? std::move(*replacement) : child);
  }
  return out;
}

}  // namespace paisoar::detail
