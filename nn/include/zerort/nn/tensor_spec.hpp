// A named parameter tensor of a model's layout: what a model registers with a
// ParameterStore (and through it with zerort's engine), in registration order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zrt::nn {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool weight_decay;  // matrices and embeddings decay; biases and LayerNorm gains do not
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t e : shape)
      n *= e;
    return n;
  }
};

}  // namespace zrt::nn
