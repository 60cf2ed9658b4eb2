#include "sampler.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace gpt2 {

int pick_token(std::span<const float> logits, double temperature, int top_k, double uniform) {
  const int V = static_cast<int>(logits.size());
  if (V == 0) throw std::invalid_argument("pick_token: no logits");
  if (temperature <= 0)
    return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  // Candidates: the top_k largest logits, most likely first (ties by lower id, so the
  // result does not depend on the sort's implementation).
  std::vector<int> ids(static_cast<size_t>(V));
  for (int i = 0; i < V; ++i)
    ids[static_cast<size_t>(i)] = i;
  const int k = top_k > 0 ? std::min(top_k, V) : V;
  auto more_likely = [&](int a, int b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), more_likely);
  ids.resize(static_cast<size_t>(k));
  const double top = logits[static_cast<size_t>(ids[0])];
  std::vector<double> weight(ids.size());
  double total = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    total += weight[i] = std::exp((logits[static_cast<size_t>(ids[i])] - top) / temperature);
  double cumulative = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    cumulative += weight[i] / total;
    if (uniform < cumulative) return ids[i];
  }
  return ids.back();  // uniform within rounding of 1
}

std::vector<int> sample(Gpt2Model<float> &model, Activations<float> &acts, std::vector<int> prompt,
                        const SampleOptions &opts) {
  if (prompt.empty()) throw std::invalid_argument("sample: the prompt needs a token");
  if (acts.max_batch() < 1) throw std::invalid_argument("sample: activations for batch 1");
  const int V = model.config().vocab_size;
  const int context = std::min(acts.max_seq(), model.config().max_seq_len);
  std::mt19937_64 rng(opts.seed);
  Kokkos::View<int *, MemSpace> device("sample_tokens", static_cast<size_t>(context));
  auto host = Kokkos::create_mirror_view(device);
  std::vector<float> row(static_cast<size_t>(V));
  std::vector<int> out;
  for (int i = 0; i < opts.tokens; ++i) {
    const int n = std::min<int>(static_cast<int>(prompt.size()), context);
    for (int t = 0; t < n; ++t)
      host(t) = prompt[prompt.size() - static_cast<size_t>(n) + static_cast<size_t>(t)];
    Kokkos::deep_copy(device, host);
    model.forward(acts, Kokkos::View<const int *, MemSpace, Unmanaged>(device.data(), n), Tokens(),
                  1, n);
    // The logits of the last position predict the next token.
    Kokkos::deep_copy(
        Kokkos::View<float *, Kokkos::HostSpace, Unmanaged>(row.data(), row.size()),
        Kokkos::View<const float *, MemSpace, Unmanaged>(
            acts.logits + static_cast<size_t>(n - 1) * static_cast<size_t>(V), row.size()));
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const int next = pick_token(row, opts.temperature, opts.top_k, u);
    out.push_back(next);
    prompt.push_back(next);
  }
  return out;
}

}  // namespace gpt2
