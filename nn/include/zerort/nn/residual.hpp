// The residual connection. Its backward needs no kernel: the gradient of a sum flows
// unchanged into both inputs, so backward keeps one running gradient of the residual
// stream (Activations::d_res), hands it as dout to the branch, and the branch's first
// layer (a LayerNorm) adds its input gradient back into it.
#pragma once

#include "tensor.hpp"

namespace zrt::nn {

/// out (N) = a (N) + b (N), elementwise over a flattened (B*T, C) tensor.
template <class T>
void residual_forward(Vec<T> out, CVec<T> a, CVec<T> b);

}  // namespace zrt::nn
