// Picking rows out of a matrix and putting gradients back: BERT's heads read only some
// positions of the last hidden state (the masked ones for MLM, as Google's BERT gathers
// them before its transform and decoder; [CLS] for NSP).
#pragma once

#include "tensor.hpp"

namespace zrt::nn {

/// out (P, C) = inp (N, C)[rows (P)]
template <class T>
void gather_rows(Mat<T> out, CMat<T> inp, Tokens rows);

/// dinp (N, C)[rows (P)] += dout (P, C). The rows must be distinct (each row is one
/// thread's: deterministic and free of races).
template <class T>
void scatter_add_rows(Mat<T> dinp, CMat<T> dout, Tokens rows);

}  // namespace zrt::nn
