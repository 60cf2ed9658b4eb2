// GELU, GPT-2's tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
#pragma once

#include "tensor.hpp"

namespace gpt2 {

/// out (N) = gelu(inp (N)), elementwise over a flattened (B*T, 4C) tensor.
template <class T>
void gelu_forward(Vec<T> out, CVec<T> inp);

/// dinp (N) = gelu'(inp) * dout (N). dinp may be dout (in place).
template <class T>
void gelu_backward(Vec<T> dinp, CVec<T> inp, CVec<T> dout);

}  // namespace gpt2
