// mirror_module: rebuilds a Python module's tree of names as nested C++
// modules, registering the Python tensors themselves at the leaves.
#include "module_mirror.h"

#include <c10/util/Exception.h>

namespace paisoar::python {

namespace {

// The module that holds `dotted`'s last part, creating the modules on the way;
// `leaf` receives that part.
torch::nn::Module& holder_of(torch::nn::Module& root, const std::string& dotted, std::string& leaf) {
  torch::nn::Module* at = &root;
  size_t start = 0;
  for (size_t dot = dotted.find('.'); dot != std::string::npos; dot = dotted.find('.', start)) {
    const std::string part = dotted.substr(start, dot - start);
    TORCH_CHECK_VALUE(!part.empty(), "the tensor name '", dotted, "' has an empty part");
    auto children = at->named_children();
    if (auto* found = children.find(part)) {
      at = found->get();
    } else {
      at = at->register_module(part, std::make_shared<torch::nn::Module>(part)).get();
    }
    start = dot + 1;
  }
  leaf = dotted.substr(start);
  TORCH_CHECK_VALUE(!leaf.empty(), "the tensor name '", dotted, "' ends with a dot");
  return *at;
}

void check_lengths(const char* what, size_t names, size_t tensors) {
  TORCH_CHECK_VALUE(names == tensors, "mirror_module: ", names, " ", what, " names for ", tensors,
                    " ", what);
}

}  // namespace

std::shared_ptr<torch::nn::Module> mirror_module(const std::vector<std::string>& parameter_names,
                                                 const std::vector<at::Tensor>& parameters,
                                                 const std::vector<std::string>& buffer_names,
                                                 const std::vector<at::Tensor>& buffers) {
  check_lengths("parameter", parameter_names.size(), parameters.size());
  check_lengths("buffer", buffer_names.size(), buffers.size());
  auto root = std::make_shared<torch::nn::Module>("PythonModule");
  std::string leaf;
  for (size_t i = 0; i < parameters.size(); ++i) {
    torch::nn::Module& holder = holder_of(*root, parameter_names[i], leaf);
    TORCH_CHECK_VALUE(!holder.named_parameters(false).contains(leaf), "the parameter name '",
                      parameter_names[i], "' is given twice");
    holder.register_parameter(leaf, parameters[i], parameters[i].requires_grad());
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    torch::nn::Module& holder = holder_of(*root, buffer_names[i], leaf);
    TORCH_CHECK_VALUE(!holder.named_buffers(false).contains(leaf), "the buffer name '",
                      buffer_names[i], "' is given twice");
    holder.register_buffer(leaf, buffers[i]);
  }
  return root;
}

}  // namespace paisoar::python
