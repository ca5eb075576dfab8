// A torch::nn::Module that holds a Python module's parameters and buffers
// under their dotted names (the same tensors, not copies), so that C++ parts
// written for modules (GradientReducer) serve Python models unchanged.
#pragma once

#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <vector>

namespace paisoar::python {

// `parameter_names[i]` names `parameters[i]` ("layer1.0.conv1.weight"), as
// Python's named_parameters() lists them; the same for buffers. Throws
// c10::ValueError for a length mismatch or a name given twice.
std::shared_ptr<torch::nn::Module> mirror_module(const std::vector<std::string>& parameter_names,
                                                 const std::vector<at::Tensor>& parameters,
                                                 const std::vector<std::string>& buffer_names,
                                                 const std::vector<at::Tensor>& buffers);

}  // namespace paisoar::python
