// GELU in its two forms: GPT-2's tanh approximation
//   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// and the exact form BERT uses (Hugging Face's "gelu"), 0.5 x (1 + erf(x / sqrt(2))).
#pragma once

#include "tensor.hpp"

namespace zrt::nn {

enum class GeluForm { tanh, erf };

/// out (N) = gelu(inp (N)), elementwise over a flattened (B*T, 4C) tensor.
template <class T>
void gelu_forward(Vec<T> out, CVec<T> inp, GeluForm form = GeluForm::tanh);

/// dinp (N) = gelu'(inp) * dout (N). dinp may be dout (in place).
template <class T>
void gelu_backward(Vec<T> dinp, CVec<T> inp, CVec<T> dout, GeluForm form = GeluForm::tanh);

}  // namespace zrt::nn
