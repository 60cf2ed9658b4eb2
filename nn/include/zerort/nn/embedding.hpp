// A table lookup added into a matrix: BERT's token-type (segment) embedding on top of the
// token and position ones (encoder.hpp), and any other embedding a model needs.
#pragma once

#include "tensor.hpp"

namespace zrt::nn {

/// out (N, C) = beta * out + table (R, C)[ids (N)]; beta 0 overwrites. Every id in [0, R).
template <class T>
void embedding_forward(Mat<T> out, Tokens ids, CMat<T> table, T beta);

/// Given dout (N, C): dtable (R, C) = beta * dtable + the rows of dout added into the rows
/// their ids name (rows no id names: 0, or unchanged when accumulating). Deterministic:
/// one thread per channel adds the positions in order.
template <class T>
void embedding_backward(Mat<T> dtable, CMat<T> dout, Tokens ids, T beta);

}  // namespace zrt::nn
