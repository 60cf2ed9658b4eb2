// The C++ WordPiece tokenizer against its reference, Hugging Face's BERT tokenizer in
// tokenizers.js (apps/data/bert_reference.mjs), exact ids: all of Moby Dick (every
// document, and the whole book as one text), every State of the Union address, and a
// generated text in many scripts. The reference ids are made by apps/data/prepare.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "bert_test_support.hpp"
#include "tokenizer/wordpiece.hpp"

namespace bert::test {
namespace {

const WordPieceTokenizer &tokenizer() {
  static const WordPieceTokenizer tok =
      WordPieceTokenizer::load(data_cache() / "tokenizer" / "bert-vocab.txt");
  return tok;
}

// Compares every file of one reference; returns the ids compared.
size_t compare_reference(const std::filesystem::path &dir) {
  const nlohmann::json manifest = nlohmann::json::parse(read_bytes(dir / "reference.json"));
  const std::string bin = read_bytes(dir / "reference.bin");
  std::vector<uint16_t> ref(bin.size() / 2);
  std::memcpy(ref.data(), bin.data(), ref.size() * 2);
  size_t at = 0, compared = 0, files = 0;
  for (const auto &f : manifest.at("files")) {
    const std::string name = f.at("name");
    const size_t count = f.at("count");
    EXPECT_LE(at + count, ref.size()) << name;
    if (at + count > ref.size()) break;
    // Where the reference is known to differ from Google's rules (bert_reference.mjs), the
    // file is not compared; none of the prepared files has such code points.
    EXPECT_EQ(f.at("deviations"), 0) << name;
    const std::vector<int32_t> ids = tokenizer().encode(read_bytes(dir / name));
    EXPECT_EQ(ids.size(), count) << name;
    size_t mismatches = 0;
    for (size_t i = 0; i < std::min(ids.size(), count); ++i)
      if (ids[i] != ref[at + i] && ++mismatches <= 3)
        ADD_FAILURE() << name << ": id " << i << " is " << ids[i] << " ("
                      << tokenizer().vocab().token(ids[i]) << "), the reference has " << ref[at + i]
                      << " (" << tokenizer().vocab().token(ref[at + i]) << ")";
    EXPECT_EQ(mismatches, 0u) << name;
    at += count;
    compared += std::min(ids.size(), count);
    ++files;
  }
  EXPECT_EQ(at, ref.size()) << dir;
  std::cout << dir.filename().string() << ": " << compared << " ids of " << files
            << " files compared\n";
  return compared;
}

TEST(TokenizerParity, MobyDickGivesTheReferenceIds) {
  EXPECT_GT(compare_reference(data_cache() / "bert" / "moby-dick"), 500000u);
}

TEST(TokenizerParity, TheStateOfTheUnionGivesTheReferenceIds) {
  EXPECT_GT(compare_reference(data_cache() / "bert" / "sotu"), 2000000u);
}

TEST(TokenizerParity, TextInManyScriptsGivesTheReferenceIds) {
  EXPECT_GT(compare_reference(data_cache() / "bert" / "unicode"), 50000u);
}

TEST(TokenizerParity, TheVocabularyHasGoogleUncasedIds) {
  const Vocabulary &v = tokenizer().vocab();
  EXPECT_EQ(v.size(), 30522);
  EXPECT_EQ(v.pad_id(), 0);
  EXPECT_EQ(v.unk_id(), 100);
  EXPECT_EQ(v.cls_id(), 101);
  EXPECT_EQ(v.sep_id(), 102);
  EXPECT_EQ(v.mask_id(), 103);
  EXPECT_EQ(v.token(1), "[unused0]");
  EXPECT_EQ(v.find("the"), 1996);
  EXPECT_EQ(v.find("##s"), 2015);
  EXPECT_EQ(tokenizer().encode("Hello, world!"), (std::vector<int32_t>{7592, 1010, 2088, 999}));
}

}  // namespace
}  // namespace bert::test
