// The configured losses, forward and backward in one call: each returns the loss of the
// rank's batch and writes the gradient of (loss * scale) with respect to the output.
//   mse            mean (or sum) over every element of (y - t)^2     (PyTorch's MSELoss)
//   l1             mean (or sum) of |y - t|; gradient sign(y - t)     (L1Loss)
//   cross_entropy  mean (or sum) over the rows of -log softmax(y)[t], t a class index per
//                  row                                                (CrossEntropyLoss)
#pragma once

#include <zerort/nn/tensor.hpp>

#include "model_config.hpp"

namespace zrt::nn::model {

/// @p y (rows, width), @p target as y for mse and l1; @p classes (rows) for cross_entropy.
/// @p dy (rows, width) receives the gradient times @p scale (the fp16 loss scale).
double loss_forward_backward(LossKind kind, bool sum, CMat<float> y, CMat<float> target,
                             Tokens classes, Mat<float> dy, double scale);

}  // namespace zrt::nn::model
