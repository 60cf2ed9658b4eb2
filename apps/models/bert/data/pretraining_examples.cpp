#include "data/pretraining_examples.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "data/sample_rng.hpp"

namespace bert {
namespace {

// The streams of random numbers, each keyed apart from the others.
constexpr uint64_t kPairStream = 1;   // (seed, stream, document, 0)
constexpr uint64_t kMaskStream = 2;   // (seed, stream, epoch, example)
constexpr uint64_t kOrderStream = 3;  // the Feistel rounds of an epoch's order

uint64_t hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  unsigned char bytes[32];
  const uint64_t words[4] = {a, b, c, d};
  for (int w = 0; w < 4; ++w)
    for (int i = 0; i < 8; ++i)
      bytes[w * 8 + i] = static_cast<unsigned char>(words[w] >> (8 * i));
  return XXH3_64bits(bytes, sizeof(bytes));
}

}  // namespace

PretrainingExamples::PretrainingExamples(const ExampleFile &file, const Vocabulary &vocab,
                                         const PretrainingOptions &options)
    : file_(file),
      options_(options),
      vocab_size_(vocab.size()),
      cls_(vocab.cls_id()),
      sep_(vocab.sep_id()),
      mask_(vocab.mask_id()),
      pad_(vocab.pad_id()) {
  auto probability = [](double p, const char *name) {
    if (!(p >= 0 && p <= 1))
      throw std::invalid_argument(fmt::format("{} {} is not a probability in [0, 1]", name, p));
  };
  if (options.seq < 8)
    throw std::invalid_argument(fmt::format("sequence length {} is below 8", options.seq));
  probability(options.short_seq_prob, "short_seq_prob");
  probability(options.next_random_prob, "next_random_prob");
  probability(options.mask_prob, "mask_prob");
  max_predictions_ = options.max_predictions >= 0
                         ? options.max_predictions
                         : static_cast<int>(std::nearbyint(options.mask_prob * options.seq));
  if (file.documents() == 0)
    throw std::runtime_error(
        fmt::format("BERT example file {}: holds no document", file.path().string()));
  for (size_t d = 0; d < file.documents(); ++d)
    build_document(d, pairs_);
}

void PretrainingExamples::build_document(size_t d, std::vector<Pair> &out) const {
  SampleRng rng = SampleRng::keyed(options_.seed, kPairStream, d, 0);
  const auto [first, last] = file_.document(d);
  const int64_t max_num_tokens = options_.seq - 3;
  int64_t target = max_num_tokens;
  if (rng.uniform() < options_.short_seq_prob) target = rng.between(2, max_num_tokens);
  auto length = [&](size_t s) {
    const auto [b, e] = file_.sentence(s);
    return static_cast<int64_t>(e - b);
  };

  // The chunk is sentences [chunk_begin, i]: consecutive, so A and B are token ranges.
  size_t chunk_begin = first;
  int64_t chunk_length = 0;
  for (size_t i = first; i < last; ++i) {
    chunk_length += length(i);
    if (i + 1 != last && chunk_length < target) continue;
    const size_t chunk_size = i + 1 - chunk_begin;
    size_t a_end = 1;
    if (chunk_size >= 2) a_end = static_cast<size_t>(rng.between(1, int64_t(chunk_size) - 1));
    Pair p{};
    p.a_begin = file_.sentence(chunk_begin).first;
    p.a_end = file_.sentence(chunk_begin + a_end - 1).second;
    if (chunk_size == 1 || rng.uniform() < options_.next_random_prob) {
      p.random_next = true;
      const int64_t target_b = target - static_cast<int64_t>(p.a_end - p.a_begin);
      size_t other = d;
      for (int attempt = 0; attempt < 10; ++attempt) {
        other = static_cast<size_t>(rng.below(file_.documents()));
        if (other != d) break;
      }
      const auto [of, ol] = file_.document(other);
      const size_t start = of + static_cast<size_t>(rng.below(ol - of));
      p.b_begin = file_.sentence(start).first;
      p.b_end = p.b_begin;
      for (size_t j = start; j < ol; ++j) {
        p.b_end = file_.sentence(j).second;
        if (static_cast<int64_t>(p.b_end - p.b_begin) >= target_b) break;
      }
      i -= chunk_size - a_end;  // the unused sentences start the next chunk
    } else {
      p.random_next = false;
      p.b_begin = p.a_end;
      p.b_end = file_.sentence(i).second;
    }
    // Google's truncate_seq_pair: trim the longer side, front or back at random.
    while (static_cast<int64_t>((p.a_end - p.a_begin) + (p.b_end - p.b_begin)) > max_num_tokens) {
      const bool a_longer = p.a_end - p.a_begin > p.b_end - p.b_begin;
      uint64_t &front = a_longer ? p.a_begin : p.b_begin;
      uint64_t &back = a_longer ? p.a_end : p.b_end;
      if (rng.uniform() < 0.5)
        ++front;
      else
        --back;
    }
    out.push_back(p);
    chunk_begin = i + 1;
    chunk_length = 0;
  }
}

int32_t PretrainingExamples::fill(uint64_t epoch, size_t index, int32_t *input_ids,
                                  int32_t *segment_ids, int32_t *attention_mask,
                                  int32_t *mlm_labels) const {
  if (index >= pairs_.size())
    throw std::out_of_range(
        fmt::format("example {} is beyond the {} examples of an epoch", index, pairs_.size()));
  const Pair &p = pairs_[index];
  const int seq = options_.seq;
  const auto ids = file_.token_ids();
  // The sequence, its segments and which positions may be picked.
  std::vector<int32_t> tokens, segments;
  tokens.reserve(static_cast<size_t>(seq));
  segments.reserve(static_cast<size_t>(seq));
  tokens.push_back(cls_);
  segments.push_back(0);
  for (uint64_t t = p.a_begin; t < p.a_end; ++t)
    tokens.push_back(ids[t]), segments.push_back(0);
  tokens.push_back(sep_);
  segments.push_back(0);
  for (uint64_t t = p.b_begin; t < p.b_end; ++t)
    tokens.push_back(ids[t]), segments.push_back(1);
  tokens.push_back(sep_);
  segments.push_back(1);
  const size_t length = tokens.size();
  const size_t a_sep = static_cast<size_t>(p.a_end - p.a_begin) + 1;

  std::vector<uint32_t> candidates;
  candidates.reserve(length);
  for (size_t i = 1; i + 1 < length; ++i)
    if (i != a_sep) candidates.push_back(static_cast<uint32_t>(i));
  SampleRng rng = SampleRng::keyed(options_.seed, kMaskStream, epoch, index);
  rng.shuffle(std::span<uint32_t>(candidates));
  const auto wanted = static_cast<size_t>(std::max(
      1.0, std::nearbyint(static_cast<double>(length) * options_.mask_prob)));  // half to even
  const size_t picks = std::min({wanted, static_cast<size_t>(max_predictions_), candidates.size()});

  std::vector<int32_t> labels(length, -1);
  std::vector<int32_t> masked = tokens;
  for (size_t k = 0; k < picks; ++k) {
    const uint32_t i = candidates[k];
    labels[i] = tokens[i];
    if (rng.uniform() < 0.8)
      masked[i] = mask_;
    else if (rng.uniform() < 0.5)
      masked[i] = tokens[i];
    else
      masked[i] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocab_size_)));
  }
  for (size_t i = 0; i < static_cast<size_t>(seq); ++i) {
    const bool valid = i < length;
    if (input_ids) input_ids[i] = valid ? masked[i] : pad_;
    if (segment_ids) segment_ids[i] = valid ? segments[i] : 0;
    if (attention_mask) attention_mask[i] = valid ? 1 : 0;
    if (mlm_labels) mlm_labels[i] = valid ? labels[i] : -1;
  }
  return p.random_next ? 1 : 0;
}

PretrainingExample PretrainingExamples::get(uint64_t epoch, size_t index) const {
  PretrainingExample e;
  const auto seq = static_cast<size_t>(options_.seq);
  e.input_ids.resize(seq);
  e.segment_ids.resize(seq);
  e.attention_mask.resize(seq);
  e.mlm_labels.resize(seq);
  e.nsp_label = fill(epoch, index, e.input_ids.data(), e.segment_ids.data(),
                     e.attention_mask.data(), e.mlm_labels.data());
  e.valid_length =
      static_cast<int32_t>(std::count(e.attention_mask.begin(), e.attention_mask.end(), 1));
  return e;
}

size_t PretrainingExamples::order(uint64_t epoch, size_t position) const {
  const uint64_t n = pairs_.size();
  if (position >= n)
    throw std::out_of_range(
        fmt::format("position {} is beyond the {} examples of an epoch", position, n));
  if (n == 1) return 0;
  // A Feistel network on 2h bits is a bijection of [0, 4^h); walking the cycle until the
  // value falls below n makes it one of [0, n). 4^h < 4n, so a walk is short.
  int h = 1;
  while ((uint64_t{1} << (2 * h)) < n)
    ++h;
  const uint64_t half_mask = (uint64_t{1} << h) - 1;
  uint64_t x = position;
  do {
    uint64_t left = x >> h, right = x & half_mask;
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t f =
          hash4(options_.seed, kOrderStream, epoch, (round << 32) | right) & half_mask;
      const uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    x = (left << h) | right;
  } while (x >= n);
  return static_cast<size_t>(x);
}

void PretrainingExamples::fill_samples(uint64_t first_sample, size_t count,
                                       const PretrainingBatch &out) const {
  const uint64_t n = pairs_.size();
  const auto seq = static_cast<size_t>(options_.seq);
  auto row = [&](int32_t *base, size_t r) { return base ? base + r * seq : nullptr; };
  for (size_t r = 0; r < count; ++r) {
    const uint64_t g = first_sample + r;
    const uint64_t epoch = g / n;
    const size_t index = order(epoch, static_cast<size_t>(g % n));
    const int32_t nsp = fill(epoch, index, row(out.input_ids, r), row(out.segment_ids, r),
                             row(out.attention_mask, r), row(out.mlm_labels, r));
    if (out.nsp_labels) out.nsp_labels[r] = nsp;
  }
}

uint64_t PretrainingExamples::first_sample(uint64_t step, size_t global_batch, int world_size,
                                           int rank, size_t micro_batch, size_t micro_step) {
  if (world_size < 1 || rank < 0 || rank >= world_size || micro_batch == 0 ||
      global_batch % (static_cast<size_t>(world_size) * micro_batch) != 0)
    throw std::invalid_argument(fmt::format(
        "a global batch of {} does not split into {} ranks of micro-batches of {} (rank {})",
        global_batch, world_size, micro_batch, rank));
  const size_t per_rank = global_batch / static_cast<size_t>(world_size);
  if (micro_step >= per_rank / micro_batch)
    throw std::invalid_argument(fmt::format("micro-step {} is beyond the {} of a step", micro_step,
                                            per_rank / micro_batch));
  return step * global_batch + static_cast<uint64_t>(rank) * per_rank + micro_step * micro_batch;
}

}  // namespace bert
