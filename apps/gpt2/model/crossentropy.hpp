// Softmax and cross-entropy over the vocabulary, fused: forward turns the logits into
// probabilities in place and computes each position's loss; backward turns those
// probabilities into the logits' gradient in place, so (B*T, V) is held only once.
#pragma once

#include "tensor.hpp"

namespace gpt2 {

/// logits (N, V) -> probs (N, V) in place; losses (N) = -log probs[n, targets(n)].
/// Returns the mean loss over the N positions.
template <class T>
T crossentropy_forward(Mat<T> logits, Vec<T> losses, Tokens targets);

/// probs (N, V) -> dlogits (N, V) in place: dloss * (probs - onehot(targets)), where dloss
/// is d(loss)/d(each position's loss), e.g. 1/N for the mean.
template <class T>
void crossentropy_backward(Mat<T> probs, Tokens targets, T dloss);

}  // namespace gpt2
