// The LibTorch API shapes that differ inside the supported 2.x range, named
// once and taken from the headers with decltype (no version #if):
// - autograd nodes are held by std::shared_ptr<Node> in older 2.x releases and
//   by c10::intrusive_ptr<Node> in recent ones (pytorch#181782);
// - torch::optim keys per-parameter state by the parameter's TensorImpl
//   address, as a string in older releases and as the void* itself in recent ones.
#pragma once

#include <torch/csrc/autograd/variable.h>
#include <torch/optim/optimizer.h>

#include <cstddef>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace paisoar::detail {

// What torch::autograd::impl::grad_accumulator() returns.
using NodePtr =
    decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));

// The key type of torch::optim::Optimizer::state().
using OptimStateKey =
    typename std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;

// The key under which torch::optim keeps `param`'s state.
// (Templates, so that the branch the headers do not take is discarded.)
template <typename Key = OptimStateKey>
Key optim_state_key(const at::Tensor& param) {
  if constexpr (std::is_same_v<Key, void*>) {
    return param.unsafeGetTensorImpl();
  } else {
    std::ostringstream key;
    key << param.unsafeGetTensorImpl();
    return key.str();
  }
}

// The key torch::optim::serialize writes for `param`'s state in an archive:
// the address in decimal where the state is keyed by void* (it reads it back
// with std::stoull), the state key itself where that is a string.
template <typename Key = OptimStateKey>
std::string optim_archive_key(const at::Tensor& param) {
  if constexpr (std::is_same_v<Key, void*>) {
    return std::to_string(reinterpret_cast<std::size_t>(param.unsafeGetTensorImpl()));
  } else {
    return optim_state_key<Key>(param);
  }
}

}  // namespace paisoar::detail
