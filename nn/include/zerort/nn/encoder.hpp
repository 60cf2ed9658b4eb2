// The input embedding: each position's token embedding plus its position embedding.
#pragma once

#include "tensor.hpp"

namespace zrt::nn {

/// out (B*T, C) = wte (V, C)[tokens (B*T)] + wpe (maxT, C)[t]
template <class T>
void encoder_forward(Mat<T> out, Tokens tokens, CMat<T> wte, CMat<T> wpe, int B, int Tn);

/// Given dout (B*T, C):
///   dwte (V, C)    += dout scattered to the rows of the tokens (always adds: the LM head
///                     wrote dwte first, the two share the tensor)
///   dwpe (maxT, C)  = beta * dwpe + sum over the batch of dout at position t; rows from
///                     Tn on get no gradient (zero, or unchanged when accumulating)
template <class T>
void encoder_backward(Mat<T> dwte, Mat<T> dwpe, CMat<T> dout, Tokens tokens, int B, int Tn, T beta);

}  // namespace zrt::nn
