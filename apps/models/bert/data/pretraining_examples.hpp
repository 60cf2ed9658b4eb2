// BERT's pretraining examples, made from an example file on the fly: sentence pairs for
// next-sentence prediction, packed to a sequence length, with masked-LM targets.
//
// Pairs follow Google's create_instances_from_document (create_pretraining_data.py) with
// dupe_factor 1: per document a target length (max_num_tokens = seq - 3, or with
// short_seq_prob a random length in [2, max_num_tokens]); sentences gather into a chunk
// until it reaches the target; segment A is its first 1..n-1 sentences; B is, with
// probability 1/2 (always when the chunk has one sentence), the start of a random
// other document (the unused sentences go back to the pool), else the rest of the chunk;
// the pair is trimmed to max_num_tokens from the front or back of the longer side at
// random. The pairs are built once, from the seed (one generator per document): they are
// the same every epoch; each epoch visits them in its own order.
//
// Masking follows create_masked_lm_predictions but is dynamic (as RoBERTa's): chosen
// again each epoch from a generator keyed by (seed, epoch, example index). Of the
// positions that are not [CLS]/[SEP], min(max_predictions, max(1, round(mask_prob *
// length))) are picked (length counts [CLS] and [SEP], as Google's; round half to even,
// as Python's round); each becomes [MASK] with probability 0.8, stays with 0.1, or becomes
// a token drawn uniformly from the whole vocabulary (specials not excluded, as in
// Google's and Hugging Face's code) with 0.1. Labels are the original ids at the picked
// positions and -1 (ignored) elsewhere.
//
// Everything depends only on (file, vocabulary, options, epoch, index), never on the
// world size: sample g of a run is example order(g / size(), g % size()) of epoch
// g / size(), and a rank fills its own share of each batch with fill_samples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/example_file.hpp"
#include "tokenizer/vocabulary.hpp"

namespace bert {

/// Knobs of PretrainingExamples (defaults as Google's for sequence length 128).
struct PretrainingOptions {
  int seq = 128;                  ///< sequence length, [CLS] and [SEP]s included; >= 8
  double short_seq_prob = 0.1;    ///< chance of a shorter target length per document
  double next_random_prob = 0.5;  ///< chance that segment B comes from another document
  double mask_prob = 0.15;        ///< share of tokens picked for MLM
  int max_predictions = -1;       ///< cap on picked tokens; -1: round(mask_prob * seq)
  uint64_t seed = 12345;          ///< fixes the pairs, their order and the masks
};

/// One example, seq entries in each array.
struct PretrainingExample {
  std::vector<int32_t> input_ids;       ///< [CLS] A [SEP] B [SEP] [PAD]..., masked
  std::vector<int32_t> segment_ids;     ///< 0 for [CLS], A and the first [SEP]; 1 for B and
                                        ///< the last [SEP]; 0 for padding
  std::vector<int32_t> attention_mask;  ///< 1 for the valid_length tokens, 0 for padding
  std::vector<int32_t> mlm_labels;      ///< original id where picked, -1 elsewhere
  int32_t valid_length = 0;             ///< tokens before the padding
  int32_t nsp_label = 0;  ///< 0: B continues A; 1: B is random (Hugging Face's convention)
};

/// Caller-owned arrays for fill_samples: row r of a batch at [r * seq, (r + 1) * seq)
/// (nsp_labels: [r]). Any pointer may be null to skip that array.
struct PretrainingBatch {
  int32_t *input_ids = nullptr;
  int32_t *segment_ids = nullptr;
  int32_t *attention_mask = nullptr;
  int32_t *mlm_labels = nullptr;
  int32_t *nsp_labels = nullptr;
};

/// The pairs of one example file and their masks, per epoch. Const methods are
/// thread-safe, so ranks' threads may fill rows in parallel.
class PretrainingExamples {
 public:
  /// Builds the pairs of @p file (which must outlive this object) for @p vocab. Throws
  /// std::invalid_argument for bad options (seq < 8, probabilities outside [0, 1]) and
  /// std::runtime_error when the file holds no document.
  PretrainingExamples(const ExampleFile &file, const Vocabulary &vocab,
                      const PretrainingOptions &options);

  /// Examples per epoch.
  size_t size() const { return pairs_.size(); }
  /// The options given.
  const PretrainingOptions &options() const { return options_; }
  /// Sequence length: the row length of every array.
  int seq() const { return options_.seq; }
  /// The cap on picked tokens in use (options().max_predictions, or its default).
  int max_predictions() const { return max_predictions_; }

  /// Example @p index (in [0, size())) with the masks of @p epoch. Const, thread-safe.
  PretrainingExample get(uint64_t epoch, size_t index) const;
  /// The same written into row arrays of seq entries each (any may be null); returns the
  /// NSP label.
  int32_t fill(uint64_t epoch, size_t index, int32_t *input_ids, int32_t *segment_ids,
               int32_t *attention_mask, int32_t *mlm_labels) const;

  /// The example at @p position of @p epoch's order (a permutation of [0, size()) keyed by
  /// seed and epoch, computed without a table).
  size_t order(uint64_t epoch, size_t position) const;

  /// Fills @p count rows of @p out with samples first_sample, first_sample + 1, ... of the
  /// run: sample g is example order(e, g % size()) of epoch e = g / size().
  void fill_samples(uint64_t first_sample, size_t count, const PretrainingBatch &out) const;

  /// The first sample of a rank's micro-batch: step @p step holds samples
  /// [step * global_batch, (step + 1) * global_batch); rank r of @p world_size takes the
  /// r-th slice of global_batch / world_size, and micro-step k of its gradient
  /// accumulation the k-th micro_batch of that slice. Throws std::invalid_argument when
  /// global_batch is not world_size * micro_batch * a whole number, or k is out of range.
  static uint64_t first_sample(uint64_t step, size_t global_batch, int world_size, int rank,
                               size_t micro_batch, size_t micro_step);

 private:
  struct Pair {
    uint64_t a_begin, a_end, b_begin, b_end;  // token offsets into the file
    bool random_next;
  };
  void build_document(size_t d, std::vector<Pair> &out) const;

  const ExampleFile &file_;
  PretrainingOptions options_;
  int32_t vocab_size_, cls_, sep_, mask_, pad_;
  int max_predictions_;
  std::vector<Pair> pairs_;
};

}  // namespace bert
