// BERT's pretraining examples on a synthetic corpus (no data needed): the pairs' shape,
// the masking statistics against Google's 15% and 80/10/10, NSP near one half, and
// determinism: the same (seed, epoch, index) gives the same example on any world size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "bert_test_support.hpp"
#include "data/example_file.hpp"
#include "data/pretraining_examples.hpp"
#include "data/sample_rng.hpp"

namespace bert::test {
namespace {

// Google's ids for the specials, then 30000 plain words: a vocabulary of 30104.
Vocabulary big_vocab() {
  std::vector<std::string> t = small_vocab_tokens();
  t.resize(104);
  for (int i = 0; i < 30000; ++i)
    t.push_back("w" + std::to_string(i));
  return Vocabulary::from_tokens(std::move(t), "synthetic vocabulary");
}

class PretrainingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir("bert_pretraining");
    vocab_ = new Vocabulary(big_vocab());
    // 60 documents of 20-80 sentences of 4-30 tokens (a document-level mix like a book's).
    ExampleCorpus c;
    SampleRng rng(7);
    for (int d = 0; d < 60; ++d) {
      const int sentences = static_cast<int>(rng.between(20, 80));
      for (int s = 0; s < sentences; ++s) {
        std::vector<int32_t> ids(static_cast<size_t>(rng.between(4, 30)));
        for (int32_t &id : ids)
          id = static_cast<int32_t>(rng.between(104, vocab_->size() - 1));
        c.add_sentence(ids);
      }
      c.end_document();
    }
    write_example_file(*dir_ / "train.bin", c, 0, c.documents(), *vocab_);
    file_ = new ExampleFile(ExampleFile::open(*dir_ / "train.bin", *vocab_));
  }
  static void TearDownTestSuite() {
    delete file_;
    delete vocab_;
    delete dir_;
  }
  static PretrainingExamples examples(int seq = 128, uint64_t seed = 12345) {
    PretrainingOptions o;
    o.seq = seq;
    o.seed = seed;
    return PretrainingExamples(*file_, *vocab_, o);
  }

  static ScratchDir *dir_;
  static Vocabulary *vocab_;
  static ExampleFile *file_;
};
ScratchDir *PretrainingTest::dir_ = nullptr;
Vocabulary *PretrainingTest::vocab_ = nullptr;
ExampleFile *PretrainingTest::file_ = nullptr;

// The position of the [SEP] after segment A: the last one of segment 0.
int a_sep(const PretrainingExample &e) {
  int last = 0;
  for (int i = 0; i < e.valid_length; ++i)
    if (e.segment_ids[static_cast<size_t>(i)] == 0) last = i;
  return last;
}

TEST_F(PretrainingTest, PairsFitTheSequenceWithClsSepAndSegments) {
  for (int seq : {128, 32}) {
    const PretrainingExamples ex = examples(seq);
    ASSERT_GT(ex.size(), 100u);
    for (size_t i = 0; i < ex.size(); ++i) {
      const PretrainingExample e = ex.get(0, i);
      ASSERT_EQ(e.input_ids.size(), static_cast<size_t>(seq));
      ASSERT_GE(e.valid_length, 5);  // [CLS] a [SEP] b [SEP]
      ASSERT_LE(e.valid_length, seq);
      const int sep = a_sep(e);
      const auto at = [&](int k) { return e.input_ids[static_cast<size_t>(k)]; };
      EXPECT_EQ(at(0), vocab_->cls_id());
      EXPECT_EQ(at(sep), vocab_->sep_id());
      EXPECT_EQ(at(e.valid_length - 1), vocab_->sep_id());
      EXPECT_GE(sep, 2);                   // A holds a token
      EXPECT_LE(sep, e.valid_length - 3);  // and so does B
      for (int k = 0; k < seq; ++k) {
        const size_t u = static_cast<size_t>(k);
        const bool valid = k < e.valid_length;
        EXPECT_EQ(e.attention_mask[u], valid ? 1 : 0);
        EXPECT_EQ(e.segment_ids[u], valid && k > sep ? 1 : 0);
        if (!valid) {
          EXPECT_EQ(e.input_ids[u], vocab_->pad_id());
          EXPECT_EQ(e.mlm_labels[u], -1);
        }
      }
      // The specials are never picked.
      EXPECT_EQ(e.mlm_labels[0], -1);
      EXPECT_EQ(e.mlm_labels[static_cast<size_t>(sep)], -1);
      EXPECT_EQ(e.mlm_labels[static_cast<size_t>(e.valid_length - 1)], -1);
      EXPECT_TRUE(e.nsp_label == 0 || e.nsp_label == 1);
    }
  }
}

TEST_F(PretrainingTest, MaskingPicksFifteenPercentOfWhichEightyTenTen) {
  const PretrainingExamples ex = examples();
  size_t tokens = 0, picked = 0, masked = 0, kept = 0, replaced = 0;
  for (uint64_t epoch = 0; epoch < 3; ++epoch)
    for (size_t i = 0; i < ex.size(); ++i) {
      const PretrainingExample e = ex.get(epoch, i);
      size_t here = 0;
      for (int k = 0; k < e.valid_length; ++k) {
        const size_t u = static_cast<size_t>(k);
        if (e.mlm_labels[u] < 0) continue;
        ++here;
        if (e.input_ids[u] == vocab_->mask_id())
          ++masked;
        else if (e.input_ids[u] == e.mlm_labels[u])
          ++kept;
        else
          ++replaced;
      }
      // Google's count: round(15% of the length), at least 1, at most max_predictions.
      const size_t want = std::min<size_t>(
          static_cast<size_t>(ex.max_predictions()),
          std::max<size_t>(1, static_cast<size_t>(std::nearbyint(0.15 * e.valid_length))));
      ASSERT_EQ(here, want) << "example " << i;
      tokens += static_cast<size_t>(e.valid_length);
      picked += here;
    }
  EXPECT_EQ(ex.max_predictions(), 19);  // round(0.15 * 128)
  const double share = static_cast<double>(picked) / static_cast<double>(tokens);
  EXPECT_NEAR(share, 0.15, 0.01);  // rounding per example moves it a little
  // 80/10/10 within four standard errors of a binomial over the picked tokens (a random
  // token equal to the original counts as kept: 1 in 30104, well inside the bounds).
  const double n = static_cast<double>(picked);
  auto near = [&](size_t count, double p) {
    EXPECT_NEAR(static_cast<double>(count) / n, p, 4 * std::sqrt(p * (1 - p) / n))
        << count << " of " << picked;
  };
  near(masked, 0.8);
  near(kept, 0.1);
  near(replaced, 0.1);
}

TEST_F(PretrainingTest, AboutHalfOfTheNextSegmentsAreRandom) {
  const PretrainingExamples ex = examples();
  size_t random = 0;
  for (size_t i = 0; i < ex.size(); ++i)
    random += static_cast<size_t>(ex.get(0, i).nsp_label);
  const double n = static_cast<double>(ex.size());
  // Half, plus the chunks of one sentence, whose B must be random (a few percent here).
  EXPECT_NEAR(static_cast<double>(random) / n, 0.5, 4 * std::sqrt(0.25 / n) + 0.02)
      << random << " of " << ex.size();
}

TEST_F(PretrainingTest, TheSameSeedEpochAndIndexGiveTheSameExample) {
  const PretrainingExamples a = examples(), b = examples();
  ASSERT_EQ(a.size(), b.size());
  size_t masks_differ = 0;
  for (size_t i = 0; i < a.size(); i += 7) {
    const PretrainingExample x = a.get(3, i), y = b.get(3, i), z = a.get(4, i);
    EXPECT_EQ(x.input_ids, y.input_ids);
    EXPECT_EQ(x.mlm_labels, y.mlm_labels);
    EXPECT_EQ(x.segment_ids, y.segment_ids);
    EXPECT_EQ(x.nsp_label, y.nsp_label);
    // Another epoch: the same pair, other masks.
    EXPECT_EQ(x.segment_ids, z.segment_ids);
    EXPECT_EQ(x.nsp_label, z.nsp_label);
    masks_differ += x.mlm_labels != z.mlm_labels;
  }
  EXPECT_GT(masks_differ, (a.size() / 7) * 9 / 10);
  // Another seed: other pairs.
  const PretrainingExamples c = examples(128, 99);
  size_t same = 0;
  for (size_t i = 0; i < std::min(a.size(), c.size()); ++i)
    same += a.get(0, i).segment_ids == c.get(0, i).segment_ids;
  EXPECT_LT(same, a.size() / 4);
}

TEST_F(PretrainingTest, EachEpochVisitsEveryExampleOnceInItsOwnOrder) {
  const PretrainingExamples ex = examples();
  std::vector<size_t> first, second;
  for (size_t p = 0; p < ex.size(); ++p) {
    first.push_back(ex.order(0, p));
    second.push_back(ex.order(1, p));
  }
  EXPECT_NE(first, second);
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  std::vector<size_t> all(ex.size());
  std::iota(all.begin(), all.end(), size_t{0});
  EXPECT_EQ(first, all);
  EXPECT_EQ(second, all);
}

TEST_F(PretrainingTest, RanksFillTheSameGlobalBatchOnAnyWorldSize) {
  const PretrainingExamples ex = examples(32);
  const size_t global = 16, seq = 32;
  // Step 40 crosses an epoch boundary for this corpus's few hundred examples.
  for (uint64_t step : {uint64_t{0}, uint64_t{40}}) {
    std::vector<std::vector<int32_t>> by_world;
    for (int world : {1, 2, 4}) {
      const size_t micro = 2;
      std::vector<int32_t> ids(global * seq), labels(global * seq), nsp(global);
      for (int rank = 0; rank < world; ++rank)
        for (size_t k = 0; k < global / static_cast<size_t>(world) / micro; ++k) {
          const uint64_t g = PretrainingExamples::first_sample(step, global, world, rank, micro, k);
          const size_t row = static_cast<size_t>(g - step * global);
          PretrainingBatch b;
          b.input_ids = ids.data() + row * seq;
          b.mlm_labels = labels.data() + row * seq;
          b.nsp_labels = nsp.data() + row;
          ex.fill_samples(g, micro, b);
        }
      ids.insert(ids.end(), labels.begin(), labels.end());
      ids.insert(ids.end(), nsp.begin(), nsp.end());
      by_world.push_back(ids);
    }
    EXPECT_EQ(by_world[0], by_world[1]);
    EXPECT_EQ(by_world[0], by_world[2]);
  }
  EXPECT_THROW(PretrainingExamples::first_sample(0, 10, 4, 0, 1, 0), std::invalid_argument);
  EXPECT_THROW(PretrainingExamples::first_sample(0, 8, 2, 2, 1, 0), std::invalid_argument);
  EXPECT_THROW(PretrainingExamples::first_sample(0, 8, 2, 1, 2, 2), std::invalid_argument);
}

TEST_F(PretrainingTest, BadOptionsAreRefused) {
  PretrainingOptions o;
  o.seq = 4;
  EXPECT_THROW(PretrainingExamples(*file_, *vocab_, o), std::invalid_argument);
  o = {};
  o.mask_prob = 1.5;
  EXPECT_THROW(PretrainingExamples(*file_, *vocab_, o), std::invalid_argument);
  const PretrainingExamples ex = examples();
  EXPECT_THROW(ex.get(0, ex.size()), std::out_of_range);
}

TEST(SampleRng, DrawsAreFixedByTheKeyAndBounded) {
  SampleRng a = SampleRng::keyed(1, 2, 3, 4), b = SampleRng::keyed(1, 2, 3, 4);
  SampleRng c = SampleRng::keyed(1, 2, 3, 5);
  EXPECT_EQ(a.next(), b.next());
  EXPECT_NE(a.next(), c.next());
  // xoshiro256** seeded through splitmix64(0): the published first output, so any platform
  // that passes draws the same numbers.
  SampleRng zero(0);
  EXPECT_EQ(zero.next(), 0x99EC5F36CB75F2B4ull);
  std::vector<int> counts(7);
  for (int i = 0; i < 70000; ++i) {
    const uint64_t v = a.below(7);
    ASSERT_LT(v, 7u);
    ++counts[v];
  }
  for (int n : counts)
    EXPECT_NEAR(n, 10000, 400);
  for (int i = 0; i < 1000; ++i) {
    const double u = a.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    const int64_t r = a.between(2, 4);
    ASSERT_GE(r, 2);
    ASSERT_LE(r, 4);
  }
}

}  // namespace
}  // namespace bert::test
