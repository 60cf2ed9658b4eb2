// GPT-2's tokenizer: the pre-tokenization regex's semantics, known encodings, the exact
// round trip, agreement with the npm package's encoder on all of Moby Dick, and clear
// errors for broken tokenizer files.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "data/token_file.hpp"
#include "data_cache.hpp"
#include "tokenizer/bpe_tokenizer.hpp"
#include "tokenizer/pretokenize.hpp"
#include "tokenizer/unicode_classes.hpp"

namespace gpt2::test {
namespace {

std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view w : pretokenize(text))
    out.emplace_back(w);
  return out;
}

using W = std::vector<std::string>;

TEST(Pretokenize, FollowsGpt2sPattern) {
  EXPECT_EQ(words("Hello world"), (W{"Hello", " world"}));
  EXPECT_EQ(words("I'm here, aren't you?"),
            (W{"I", "'m", " here", ",", " aren", "'t", " you", "?"}));
  EXPECT_EQ(words("we'll they've you're he'd"),
            (W{"we", "'ll", " they", "'ve", " you", "'re", " he", "'d"}));
  EXPECT_EQ(words("I'M"), (W{"I", "'", "M"}));  // contractions are lower case only
  EXPECT_EQ(words("abc123 4567!"), (W{"abc", "123", " 4567", "!"}));
  // A run of spaces before a word leaves its last space to the word (\s+(?!\S)).
  EXPECT_EQ(words("a   b"), (W{"a", "  ", " b"}));
  EXPECT_EQ(words("a\n\nb"), (W{"a", "\n", "\n", "b"}));
  EXPECT_EQ(words("a \n b"), (W{"a", " \n", " b"}));
  EXPECT_EQ(words("end  "), (W{"end", "  "}));  // at the end the whole run is one word
  EXPECT_EQ(words("!!!  ?"), (W{"!!!", " ", " ?"}));
  EXPECT_EQ(words("x\ty"), (W{"x", "\t", "y"}));
  EXPECT_EQ(words(""), W{});
}

TEST(Pretokenize, KnowsUnicodeLettersNumbersAndSpaces) {
  EXPECT_EQ(words("naïve café"), (W{"naïve", " café"}));
  EXPECT_EQ(words("你好世界"), (W{"你好世界"}));
  EXPECT_EQ(words("x² ½"), (W{"x", "²", " ½"}));          // No is a number
  EXPECT_EQ(words("a\u00a0b"), (W{"a", "\u00a0", "b"}));  // no-break space
  EXPECT_EQ(words("—dash—"), (W{"—", "dash", "—"}));      // Pd is "other"
  EXPECT_TRUE(is_letter(U'é') && is_letter(U'Ж') && is_letter(U'ح') && !is_letter(U'1'));
  EXPECT_TRUE(is_number(U'٣') && is_number(U'Ⅻ') && !is_number(U'a'));
  EXPECT_TRUE(is_whitespace(0x3000) && is_whitespace(0x85) && !is_whitespace(0x200B));
}

TEST(Pretokenize, PiecesConcatenateToAnyInput) {
  // Random bytes, invalid UTF-8 included: the words cover the input exactly, in order.
  std::mt19937_64 rng(1);
  const std::string alphabet = "ab \n\t'!9\xc3\xa9\xe4\xbd\xa0\xff\x80";
  for (int round = 0; round < 200; ++round) {
    std::string text;
    for (int i = 0; i < 40; ++i)
      text += alphabet[rng() % alphabet.size()];
    std::string joined;
    for (std::string_view w : pretokenize(text)) {
      EXPECT_FALSE(w.empty());
      joined += w;
    }
    ASSERT_EQ(joined, text);
  }
}

class Tokenizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tok_ = new BpeTokenizer(BpeTokenizer::load_dir(data_cache() / "tokenizer"));
  }
  static void TearDownTestSuite() { delete tok_; }
  static BpeTokenizer *tok_;
};
BpeTokenizer *Tokenizer::tok_ = nullptr;

TEST_F(Tokenizer, KnownEncodings) {
  // GPT-2's encodings (OpenAI's encoder.py and the npm package gpt-3-encoder agree).
  EXPECT_EQ(tok_->vocab_size(), 50257);
  EXPECT_EQ(tok_->eot(), 50256);
  EXPECT_EQ(tok_->encode("Hello world"), (std::vector<int>{15496, 995}));
  EXPECT_EQ(tok_->encode(" Hello world"), (std::vector<int>{18435, 995}));
  EXPECT_EQ(tok_->encode("I'm here, aren't you?"),
            (std::vector<int>{40, 1101, 994, 11, 3588, 470, 345, 30}));
  EXPECT_EQ(tok_->encode("  spaces   and\n\nnewlines\t"),
            (std::vector<int>{220, 9029, 220, 220, 290, 198, 198, 3605, 6615, 197}));
  EXPECT_EQ(tok_->encode("你好世界"),
            (std::vector<int>{19526, 254, 25001, 121, 10310, 244, 45911, 234}));
  EXPECT_EQ(tok_->encode("naïve café 2024!"), (std::vector<int>{2616, 38776, 40304, 48609, 0}));
  // The special token's name in text is ordinary text, as in encoder.py.
  EXPECT_EQ(tok_->encode("<|endoftext|>"), (std::vector<int>{27, 91, 437, 1659, 5239, 91, 29}));
  EXPECT_EQ(tok_->decode(std::vector<int>{50256}), "<|endoftext|>");
  EXPECT_EQ(tok_->decode(std::vector<int>{15496, 995}), "Hello world");
}

TEST_F(Tokenizer, RoundTripsArbitraryBytes) {
  std::mt19937_64 rng(2);
  for (int round = 0; round < 100; ++round) {
    std::string text;
    const int n = static_cast<int>(rng() % 64);
    for (int i = 0; i < n; ++i)
      text += static_cast<char>(rng() % 256);
    ASSERT_EQ(tok_->decode(tok_->encode(text)), text);
  }
}

TEST_F(Tokenizer, AgreesWithTheNpmEncoderOnMobyDick) {
  const std::string text = read_bytes(data_cache() / "moby-dick" / "source" / "moby-dick.txt");
  ASSERT_GT(text.size(), 1000000u);
  std::vector<int> ids = tok_->encode(text);
  TokenFile ref = TokenFile::open(data_cache() / "moby-dick" / "reference.bin", TokenFormat::raw,
                                  tok_->vocab_size());
  ASSERT_EQ(ids.size(), ref.size());
  size_t mismatches = 0, first = ids.size();
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] != ref.tokens()[i]) {
      ++mismatches;
      first = std::min(first, i);
    }
  EXPECT_EQ(mismatches, 0u) << "first at token " << first;
  EXPECT_EQ(tok_->decode(ids), text);  // exact round trip on the whole book
  std::printf("  moby dick: %zu bytes, %zu tokens, identical to gpt-3-encoder's\n", text.size(),
              ids.size());
}

TEST_F(Tokenizer, PreparedTokenFilesHoldTheCorpus) {
  const std::filesystem::path dir = data_cache() / "moby-dick";
  TokenFile train = TokenFile::open(dir / "train.bin", TokenFormat::automatic, 50257);
  TokenFile val = TokenFile::open(dir / "val.bin", TokenFormat::automatic, 50257);
  EXPECT_EQ(train.format(), TokenFormat::llmc);
  std::vector<int> all(train.tokens().begin(), train.tokens().end());
  all.insert(all.end(), val.tokens().begin(), val.tokens().end());
  ASSERT_EQ(all.front(), 50256);  // each document starts with <|endoftext|>
  EXPECT_NEAR(static_cast<double>(val.size()) / all.size(), 0.1, 0.001);
  all.erase(all.begin());
  EXPECT_EQ(tok_->decode(all), read_bytes(dir / "source" / "moby-dick.txt"));
}

// Writes a broken copy of the tokenizer and returns load()'s message.
std::string load_error(const std::string &encoder, const std::string &merges) {
  ScratchDir dir("zrt_tok");
  if (!encoder.empty()) std::ofstream(dir / "encoder.json") << encoder;
  std::ofstream(dir / "vocab.bpe") << merges;
  try {
    BpeTokenizer::load_dir(dir.path());
  } catch (const std::runtime_error &e) {
    std::string m = e.what();
    // Drop the folder, which differs per run.
    size_t at = m.find(dir.path().string());
    if (at != std::string::npos) m.replace(at, dir.path().string().size() + 1, "");
    return m;
  }
  return "loaded";
}

TEST(TokenizerFiles, BrokenFilesSayWhatIsWrong) {
  EXPECT_EQ(load_error("", "#version: 0.2\n"),
            "tokenizer file encoder.json: cannot be opened: No such file or directory (run "
            "apps/data/prepare to fetch GPT-2's tokenizer)");
  EXPECT_EQ(load_error("{\"a\": 0,", "#version: 0.2\n").substr(0, 50),
            "tokenizer file encoder.json: not valid JSON: [json");
  EXPECT_EQ(load_error("[1, 2]", "#version: 0.2\n"),
            "tokenizer file encoder.json: expected a JSON object mapping token strings to ids");
  EXPECT_EQ(load_error(R"({"a": 0, "b": 0})", "#version: 0.2\n"),
            "tokenizer file encoder.json: token \"b\" has id 0; ids must be 0..1 and unique");
  EXPECT_EQ(load_error(R"({"a": "x"})", "#version: 0.2\n"),
            "tokenizer file encoder.json: the id of token \"a\" is not an integer");
  EXPECT_EQ(load_error(R"({"a": 0})", "#version: 0.2\n"),
            "tokenizer file encoder.json: no token for byte 0x00; not a byte-level BPE "
            "vocabulary");
}

TEST_F(Tokenizer, BrokenMergesSayWhatIsWrong) {
  // The real encoder.json with a broken vocab.bpe.
  const std::string encoder = read_bytes(data_cache() / "tokenizer" / "encoder.json");
  EXPECT_EQ(load_error(encoder, "#version: 0.2\nĠ t\nabc\n"),
            "tokenizer file vocab.bpe: line 3: expected two symbols separated by one space, got "
            "\"abc\"");
  EXPECT_EQ(load_error(encoder, "#version: 0.2\nĠ t\nqqqq zzzz\n"),
            "tokenizer file vocab.bpe: line 3: merge \"qqqq zzzz\" uses a token that "
            "encoder.json lacks");
  EXPECT_EQ(load_error(encoder, "#version: 0.2\n"), "tokenizer file vocab.bpe: holds no merges");
  EXPECT_THROW(tok_->decode(std::vector<int>{50257}), std::runtime_error);
}

}  // namespace
}  // namespace gpt2::test
