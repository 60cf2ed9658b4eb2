#include "data_loader.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace gpt2 {

DataLoader::DataLoader(const TokenFile &file, int batch, int seq, int rank, int nranks)
    : file_(file), batch_tokens_(int64_t{batch} * seq), rank_(rank), nranks_(nranks) {
  if (batch <= 0 || seq <= 0 || nranks <= 0 || rank < 0 || rank >= nranks)
    throw std::invalid_argument(
        fmt::format("data loader: batch {} x {} on rank {} of {} is not a valid shape", batch, seq,
                    rank, nranks));
  const int64_t need = batch_tokens_ * nranks_ + 1;
  if (static_cast<int64_t>(file_.size()) < need)
    throw std::runtime_error(fmt::format(
        "token file {}: {} tokens are too few for batches of {} x {} on {} rank(s) (need {})",
        file_.path().string(), file_.size(), batch, seq, nranks, need));
  reset();
}

void DataLoader::reset() {
  position_ = batch_tokens_ * rank_;
  epoch_ = 0;
}

void DataLoader::seek(int64_t position, int64_t epoch) {
  if (position < 0 || position + batch_tokens_ + 1 > static_cast<int64_t>(file_.size()))
    throw std::out_of_range(fmt::format("data loader: position {} is outside the file", position));
  position_ = position;
  epoch_ = epoch;
}

void DataLoader::skip(int64_t batches) {
  for (int64_t i = 0; i < batches; ++i) {
    if (position_ + batch_tokens_ + 1 > static_cast<int64_t>(file_.size())) {
      position_ = batch_tokens_ * rank_;
      ++epoch_;
    }
    position_ += batch_tokens_ * nranks_;
  }
}

int64_t DataLoader::batches_per_epoch() const {
  return (static_cast<int64_t>(file_.size()) - 1) / (batch_tokens_ * nranks_);
}

void DataLoader::next(std::span<int> inputs, std::span<int> targets) {
  if (static_cast<int64_t>(inputs.size()) != batch_tokens_ ||
      static_cast<int64_t>(targets.size()) != batch_tokens_)
    throw std::invalid_argument("data loader: inputs and targets must hold B*T ids");
  if (position_ + batch_tokens_ + 1 > static_cast<int64_t>(file_.size())) {
    position_ = batch_tokens_ * rank_;
    ++epoch_;
  }
  std::span<const uint16_t> t = file_.tokens().subspan(static_cast<size_t>(position_));
  for (int64_t i = 0; i < batch_tokens_; ++i) {
    inputs[static_cast<size_t>(i)] = t[static_cast<size_t>(i)];
    targets[static_cast<size_t>(i)] = t[static_cast<size_t>(i) + 1];
  }
  position_ += batch_tokens_ * nranks_;
}

}  // namespace gpt2
