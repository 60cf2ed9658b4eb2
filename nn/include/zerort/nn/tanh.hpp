// tanh, elementwise: BERT's pooler (dense + tanh on the [CLS] position).
#pragma once

#include "tensor.hpp"

namespace zrt::nn {

/// out (N) = tanh(inp (N)).
template <class T>
void tanh_forward(Vec<T> out, CVec<T> inp);

/// dinp (N) = (1 - out^2) * dout (N), from forward's output. dinp may be dout (in place).
template <class T>
void tanh_backward(Vec<T> dinp, CVec<T> out, CVec<T> dout);

}  // namespace zrt::nn
