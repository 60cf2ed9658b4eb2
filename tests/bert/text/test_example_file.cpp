// BERT's example files: what is written is read back, and every damaged or foreign file
// is refused with its name and the reason (a GPT-2 token file by what it is; a FIFO, a
// folder or a device, without waiting on the FIFO).
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <string>
#include <vector>

#include "../../not_regular_files.hpp"
#include "bert_test_support.hpp"
#include "data/example_file.hpp"
#include "data/token_file.hpp"

namespace bert::test {
namespace {

// Three documents of 2, 1 and 3 sentences.
ExampleCorpus make_corpus() {
  ExampleCorpus c;
  const std::vector<std::vector<std::vector<int32_t>>> docs = {
      {{104, 105}, {106}}, {{107, 108, 109}}, {{110}, {111, 112}, {}, {113, 114, 115}}};
  for (const auto &doc : docs) {
    for (const auto &s : doc)
      c.add_sentence(s);
    c.end_document();
  }
  c.end_document();  // an empty document is left out
  return c;
}

class ExampleFileTest : public ::testing::Test {
 protected:
  ScratchDir dir_{"bert_example_file"};
  Vocabulary vocab_ = small_vocab();

  std::filesystem::path write_all(const std::string &name) {
    write_example_file(dir_ / name, make_corpus(), 0, 3, vocab_);
    return dir_ / name;
  }
  // The message of opening @p path, checked to name the file.
  std::string open_error(const std::filesystem::path &path) {
    const std::string m = error_of([&] { ExampleFile::open(path, vocab_); });
    EXPECT_NE(m.find(path.string()), std::string::npos) << m;
    return m;
  }
  // @p bytes with the payload checksum recomputed, so only the damage meant is seen.
  static std::string rehash(std::string bytes) {
    const uint64_t sum = XXH3_64bits(bytes.data() + 64, bytes.size() - 64);
    std::memcpy(bytes.data() + 48, &sum, sizeof(sum));
    return bytes;
  }
};

TEST_F(ExampleFileTest, WhatIsWrittenIsReadBack) {
  const ExampleFile f = ExampleFile::open(write_all("all.bin"), vocab_);
  ASSERT_EQ(f.documents(), 3u);
  EXPECT_EQ(f.sentences(), 6u);
  EXPECT_EQ(f.tokens(), 12u);
  EXPECT_EQ(f.document(2), (std::pair<size_t, size_t>{3, 6}));
  EXPECT_EQ(f.sentence(5), (std::pair<size_t, size_t>{9, 12}));
  EXPECT_EQ(f.token_ids()[9], 113);
  // A split by documents renumbers from 0.
  write_example_file(dir_ / "tail.bin", make_corpus(), 1, 3, vocab_);
  const ExampleFile tail = ExampleFile::open(dir_ / "tail.bin", vocab_);
  EXPECT_EQ(tail.documents(), 2u);
  EXPECT_EQ(tail.sentence(0), (std::pair<size_t, size_t>{0, 3}));
  EXPECT_EQ(tail.token_ids()[0], 107);
}

TEST_F(ExampleFileTest, AMissingFileIsRefused) {
  EXPECT_NE(open_error(dir_ / "none.bin").find("cannot open"), std::string::npos);
}

TEST_F(ExampleFileTest, WhatIsNotARegularFileIsRefusedWithoutWaitingNamingWhatItIs) {
  const ::test::NotRegularFiles paths("examples");
  for (const ::test::NotRegular &p : paths.all()) {
    SCOPED_TRACE(p.path);
    std::string m;
    ASSERT_TRUE(::test::returns_within(
        [&] { m = error_of([&] { ExampleFile::open(p.path, vocab_); }); }, paths.fifo()))
        << "ExampleFile::open blocked on " << p.path;
    EXPECT_NE(m.find("BERT example file " + p.path + ": cannot open: it is " + p.kind),
              std::string::npos)
        << m;
  }
}

TEST_F(ExampleFileTest, ATruncatedFileIsRefused) {
  const std::string bytes = read_bytes(write_all("t.bin"));
  write_bytes(dir_ / "t.bin", bytes.substr(0, bytes.size() - 3));
  EXPECT_NE(open_error(dir_ / "t.bin").find("(truncated?)"), std::string::npos);
  write_bytes(dir_ / "t.bin", bytes.substr(0, 20));
  EXPECT_NE(open_error(dir_ / "t.bin").find("shorter than the 64-byte header"), std::string::npos);
  write_bytes(dir_ / "t.bin", "");
  EXPECT_NE(open_error(dir_ / "t.bin").find("0 bytes"), std::string::npos);
}

TEST_F(ExampleFileTest, AWrongMagicIsRefused) {
  std::string bytes = read_bytes(write_all("m.bin"));
  std::memcpy(bytes.data(), "notbert", 8);
  write_bytes(dir_ / "m.bin", bytes);
  EXPECT_NE(open_error(dir_ / "m.bin").find("bad magic: not a BERT example file"),
            std::string::npos);
}

TEST_F(ExampleFileTest, AGpt2TokenFileIsRefusedAsSuch) {
  const std::vector<uint16_t> tokens = {464, 2068, 7586, 21831, 18045};
  gpt2::write_token_file(dir_ / "gpt2.bin", tokens, gpt2::TokenFormat::llmc);
  const std::string m = open_error(dir_ / "gpt2.bin");
  EXPECT_NE(m.find("this is a GPT-2 (llm.c) token file"), std::string::npos) << m;
}

TEST_F(ExampleFileTest, AnotherFormatVersionIsRefused) {
  std::string bytes = read_bytes(write_all("v.bin"));
  const uint32_t version = 2;
  std::memcpy(bytes.data() + 8, &version, sizeof(version));
  write_bytes(dir_ / "v.bin", bytes);
  EXPECT_NE(open_error(dir_ / "v.bin").find("format version 2 is not supported"),
            std::string::npos);
}

TEST_F(ExampleFileTest, AFileOfAnotherVocabularyIsRefused) {
  write_all("other.bin");
  std::vector<std::string> tokens = small_vocab_tokens();
  tokens.push_back("extra");
  const Vocabulary other = Vocabulary::from_tokens(tokens, "other");
  const std::string m = error_of([&] { ExampleFile::open(dir_ / "other.bin", other); });
  EXPECT_NE(m.find("made with another vocabulary"), std::string::npos) << m;
  // Same size, other tokens: the checksum tells them apart.
  tokens.pop_back();
  tokens.back() = "##f";
  const Vocabulary same_size = Vocabulary::from_tokens(tokens, "same size");
  EXPECT_NE(error_of([&] {
              ExampleFile::open(dir_ / "other.bin", same_size);
            }).find("made with another vocabulary"),
            std::string::npos);
}

TEST_F(ExampleFileTest, IdsBeyondTheVocabularyAreRefused) {
  // The file claims a vocabulary of 110 tokens (its size and checksum patched in): ids 110
  // and up are beyond it.
  std::vector<std::string> tokens = small_vocab_tokens();
  tokens.resize(110);
  const Vocabulary small = Vocabulary::from_tokens(tokens, "110 tokens");
  std::string bytes = read_bytes(write_all("ids.bin"));
  const uint32_t size = 110;
  const uint64_t checksum = small.checksum();
  std::memcpy(bytes.data() + 12, &size, sizeof(size));
  std::memcpy(bytes.data() + 16, &checksum, sizeof(checksum));
  write_bytes(dir_ / "ids.bin", bytes);
  const std::string m = error_of([&] { ExampleFile::open(dir_ / "ids.bin", small); });
  EXPECT_NE(m.find("token 110 at position 6 is outside the vocabulary of 110"), std::string::npos)
      << m;
}

TEST_F(ExampleFileTest, ABadChecksumIsRefused) {
  std::string bytes = read_bytes(write_all("c.bin"));
  bytes[bytes.size() - 1] ^= 1;
  write_bytes(dir_ / "c.bin", bytes);
  EXPECT_NE(open_error(dir_ / "c.bin").find("checksum mismatch"), std::string::npos);
}

TEST_F(ExampleFileTest, OffsetsOutOfOrderAreRefused) {
  std::string bytes = read_bytes(write_all("o.bin"));
  // Sentence offsets begin after the 4 document offsets; make sentence 1 end before it begins.
  const uint64_t bad = 1;
  std::memcpy(bytes.data() + 64 + 4 * 8 + 2 * 8, &bad, sizeof(bad));
  write_bytes(dir_ / "o.bin", rehash(bytes));
  const std::string m = open_error(dir_ / "o.bin");
  EXPECT_NE(m.find("sentence 1 spans tokens [2, 1)"), std::string::npos) << m;
  // Counts that cannot fit the file.
  bytes = read_bytes(write_all("n.bin"));
  const uint64_t huge = uint64_t{1} << 60;
  std::memcpy(bytes.data() + 24, &huge, sizeof(huge));
  write_bytes(dir_ / "n.bin", bytes);
  EXPECT_NE(open_error(dir_ / "n.bin").find("cannot fit"), std::string::npos);
}

TEST(ExampleCorpus, RefusesIdsThatDoNotFitUint16) {
  ExampleCorpus c;
  const std::vector<int32_t> ids = {70000};
  EXPECT_THROW(c.add_sentence(ids), std::out_of_range);
}

}  // namespace
}  // namespace bert::test
