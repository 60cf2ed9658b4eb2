// One micro-batch of BERT pretraining examples on the device: what the model reads.
// DeviceBatch copies a host batch (the example builder's arrays) into views it owns.
#pragma once

#include <cstdint>
#include <vector>

#include <zerort/nn/tensor.hpp>

namespace bert {

using zrt::nn::MemSpace;
using zrt::nn::Tokens;

/// Views into device memory; the caller keeps them alive.
struct BertBatch {
  int B = 0, T = 0;    // sequences, tokens per sequence (padded to T)
  int P = 0;           // masked positions in the batch: MLM predictions
  Tokens input_ids;    // (B*T) WordPiece ids, [PAD] past each sequence's length
  Tokens segment_ids;  // (B*T) 0 for [CLS], segment A and its [SEP]; 1 for segment B
  Tokens lengths;      // (B) real tokens of each sequence, in [1, T]
  Tokens cls_rows;     // (B) b * T: where each sequence's [CLS] is
  Tokens mlm_rows;     // (P) flat positions b * T + t of the masked tokens, ascending
  Tokens mlm_labels;   // (P) the original token at each
  Tokens nsp_labels;   // (B) 0: segment B follows A in the text, 1: B is random (HF's)
};

/// A batch as the host builds it.
struct HostBatch {
  int B = 0, T = 0;
  std::vector<int> input_ids, segment_ids;  // B*T each
  std::vector<int> lengths;                 // B
  std::vector<int> mlm_labels;              // B*T: the original id where masked, else -1
  std::vector<int> nsp_labels;              // B
};

class DeviceBatch {
 public:
  /// Sized for up to @p max_batch sequences of @p max_seq tokens.
  DeviceBatch(int max_batch, int max_seq);
  /// Checks @p host (shapes, ids below @p vocab_size, segment ids below @p type_vocab,
  /// lengths, labels) and copies it. Throws std::invalid_argument naming the first problem.
  void set(const HostBatch &host, int vocab_size, int type_vocab);
  const BertBatch &view() const { return view_; }

 private:
  int max_batch_, max_seq_;
  Kokkos::View<int *, MemSpace> ids_, segments_, lengths_, cls_, mlm_rows_, mlm_labels_, nsp_;
  BertBatch view_;
};

}  // namespace bert
