// Batches of B sequences of T tokens from a token file, sharded over data-parallel ranks
// as in llm.c: rank r reads the B*T+1 tokens at (k * nranks + r) * B*T for its k-th batch
// (inputs are the first B*T, targets the same shifted by one), wrapping to the start when
// the file runs out. Every token is seen once per epoch, by one rank.
#pragma once

#include <cstdint>
#include <span>

#include "token_file.hpp"

namespace gpt2 {

class DataLoader {
 public:
  /// Throws std::runtime_error if the file has fewer than nranks*B*T + 1 tokens.
  DataLoader(const TokenFile &file, int batch, int seq, int rank, int nranks);

  /// The next batch: inputs and targets, B*T ids each, row-major (b, t).
  void next(std::span<int> inputs, std::span<int> targets);
  /// Back to this rank's first batch.
  void reset();

  int64_t epoch() const { return epoch_; }
  /// Where the next batch starts (for checkpoints: seek() resumes there).
  int64_t position() const { return position_; }
  void seek(int64_t position, int64_t epoch);
  /// Moves past @p batches batches without reading them, as as many next() calls would.
  void skip(int64_t batches);
  /// Batches per epoch and rank.
  int64_t batches_per_epoch() const;

 private:
  const TokenFile &file_;
  int64_t batch_tokens_;  // B*T
  int rank_, nranks_;
  int64_t position_ = 0, epoch_ = 0;
};

}  // namespace gpt2
