// Softmax and cross-entropy over the vocabulary, fused: forward turns the logits into
// probabilities in place and computes each position's loss; backward turns those
// probabilities into the logits' gradient in place, so (B*T, V) is held only once.
#pragma once

#include "tensor.hpp"

namespace zrt::nn {

/// logits (N, V) -> probs (N, V) in place; losses (N) = -log probs[n, targets(n)].
/// Returns the mean loss over the N positions.
template <class T>
T crossentropy_forward(Mat<T> logits, Vec<T> losses, Tokens targets);

/// probs (N, V) -> dlogits (N, V) in place: dloss * (probs - onehot(targets)), where dloss
/// is d(loss)/d(each position's loss), e.g. 1/N for the mean.
template <class T>
void crossentropy_backward(Mat<T> probs, Tokens targets, T dloss);

/// Rows of @p scores (N, V) (logits or probabilities) whose largest entry is at the
/// target: an accuracy's numerator. Ties go to the lowest index, as argmax does.
template <class T>
int64_t crossentropy_correct(CMat<T> scores, Tokens targets);

}  // namespace zrt::nn
