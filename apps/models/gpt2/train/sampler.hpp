// Text generation from the model: temperature and top-k sampling, one token at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/activations.hpp"
#include "model/gpt2_model.hpp"

namespace gpt2 {

struct SampleOptions {
  int tokens = 64;           // how many to generate
  double temperature = 1.0;  // <= 0: always the most likely token
  int top_k = 40;            // sample among the k most likely; 0 = all
  uint64_t seed = 1;
};

/// The next token from one position's logits (V): divided by the temperature, cut to the
/// top k, softmax, then the token where the cumulative probability passes @p uniform
/// (in [0, 1)). Host code; deterministic for a given uniform.
int pick_token(std::span<const float> logits, double temperature, int top_k, double uniform);

/// Continues @p prompt (at least one token) by opts.tokens tokens; returns only the new
/// ones. @p acts must be inference activations for batch 1; the context is the last
/// acts.max_seq() tokens. Every rank must call it with the same arguments (forward is
/// collective at ZeRO stage 3) and gets the same tokens.
std::vector<int> sample(Gpt2Model<float> &model, Activations<float> &acts, std::vector<int> prompt,
                        const SampleOptions &opts);

}  // namespace gpt2
