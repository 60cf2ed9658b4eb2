// The example files apps/data/prepare --model bert made: they open against the vocabulary,
// hold the documents prepare says, and give pretraining examples.
#include <gtest/gtest.h>

#include <string>

#include "bert_test_support.hpp"
#include "data/example_file.hpp"
#include "data/pretraining_examples.hpp"
#include "tokenizer/wordpiece.hpp"

namespace bert::test {
namespace {

const Vocabulary &vocab() {
  static const Vocabulary v = Vocabulary::load(data_cache() / "tokenizer" / "bert-vocab.txt");
  return v;
}

TEST(PreparedData, MobyDickIsItsChaptersWithTheLastTenthForValidation) {
  const auto dir = data_cache() / "bert" / "moby-dick";
  const ExampleFile train = ExampleFile::open(dir / "train.bin", vocab());
  const ExampleFile val = ExampleFile::open(dir / "val.bin", vocab());
  // Etymology, extracts, 135 chapters and the epilogue.
  EXPECT_EQ(train.documents() + val.documents(), 138u);
  EXPECT_EQ(val.documents(), 14u);
  EXPECT_GT(train.sentences(), 7000u);
  EXPECT_GT(train.tokens() + val.tokens(), 280000u);
  const PretrainingExamples ex(train, vocab(), PretrainingOptions{});
  EXPECT_GT(ex.size(), 1500u);
  const PretrainingExample e = ex.get(0, 0);
  EXPECT_EQ(e.input_ids[0], vocab().cls_id());
}

TEST(PreparedData, TheStateOfTheUnionIsOneAddressADocument) {
  const auto dir = data_cache() / "bert" / "sotu";
  const ExampleFile train = ExampleFile::open(dir / "train.bin", vocab());
  const ExampleFile val = ExampleFile::open(dir / "val.bin", vocab());
  EXPECT_EQ(train.documents() + val.documents(), 233u);
  EXPECT_EQ(val.documents(), 23u);
}

TEST(PreparedData, ExampleFilesAreRefusedUnderAnotherVocabulary) {
  std::vector<std::string> tokens;
  for (int32_t id = 0; id < vocab().size(); ++id)
    tokens.push_back(vocab().token(id));
  std::swap(tokens[2000], tokens[2001]);
  const Vocabulary swapped = Vocabulary::from_tokens(tokens, "swapped");
  const auto path = data_cache() / "bert" / "moby-dick" / "val.bin";
  const std::string m = error_of([&] { ExampleFile::open(path, swapped); });
  EXPECT_NE(m.find("made with another vocabulary"), std::string::npos) << m;
}

}  // namespace
}  // namespace bert::test
