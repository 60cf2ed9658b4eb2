// BERT's uncased WordPiece tokenizer on hand-made cases (a small vocabulary, no data):
// every step of Google's basic tokenizer, the greedy WordPiece split, [UNK], invalid
// UTF-8, and the refusals of a bad vocabulary file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bert_test_support.hpp"
#include "tokenizer/unicode_properties.hpp"
#include "tokenizer/utf8.hpp"
#include "tokenizer/wordpiece.hpp"

namespace bert::test {
namespace {

using Pieces = std::vector<std::string>;

const WordPieceTokenizer &tokenizer() {
  static const WordPieceTokenizer tok(small_vocab());
  return tok;
}

Pieces pieces(std::string_view text) {
  return tokenizer().pieces(text);
}

TEST(WordPiece, AccentsAreStrippedAndCaseIsLowered) {
  EXPECT_EQ(pieces("Héllo, WORLD!"), (Pieces{"hello", ",", "world", "!"}));
  EXPECT_EQ(pieces("CAFÉ naïve"), (Pieces{"cafe", "naive"}));
  // Decomposed input (e + U+0301) gives the same as the precomposed character.
  EXPECT_EQ(pieces("cafe\xCC\x81"), (Pieces{"cafe"}));
}

TEST(WordPiece, WordsSplitIntoTheLongestPiecesFromTheLeft) {
  EXPECT_EQ(pieces("unaffable"), (Pieces{"un", "##aff", "##able"}));
  EXPECT_EQ(pieces("abc"), (Pieces{"a", "##b", "##c"}));
  EXPECT_EQ(pieces("whales"), (Pieces{"whale", "##s"}));
}

TEST(WordPiece, AWordWithAnUnmatchableRestIsOneUnknown) {
  EXPECT_EQ(pieces("helloq world"), (Pieces{"[UNK]", "world"}));
  EXPECT_EQ(pieces("zzz"), (Pieces{"[UNK]"}));
}

TEST(WordPiece, PunctuationIsAWordOfItsOwn) {
  EXPECT_EQ(pieces("hello,world!"), (Pieces{"hello", ",", "world", "!"}));
  // ASCII symbols count as punctuation, as in Google's _is_punctuation.
  EXPECT_EQ(pieces("$5"), (Pieces{"$", "5"}));
  EXPECT_EQ(pieces("whale's"), (Pieces{"whale", "'", "s"}));
  // Unicode category P beyond ASCII: the em dash and the ideographic full stop.
  EXPECT_EQ(pieces("hello\xE2\x80\x94world\xE3\x80\x82"),
            (Pieces{"hello", "[UNK]", "world", "[UNK]"}));
}

TEST(WordPiece, SpecialTokensInTheTextAreOrdinaryText) {
  const std::vector<int32_t> ids = tokenizer().encode("[MASK] [CLS]");
  ASSERT_EQ(ids.size(), 6u);  // "[", "mask", "]", "[", "cls", "]"
  for (int32_t id : ids)
    EXPECT_EQ(id, tokenizer().vocab().unk_id());
}

TEST(WordPiece, ChineseCharactersAreSpacedApart) {
  EXPECT_EQ(pieces("x中文x"), (Pieces{"x", "中", "文", "x"}));
}

TEST(WordPiece, WordsOverOneHundredCodePointsAreUnknown) {
  const Pieces hundred = pieces(std::string(100, 'x'));
  ASSERT_EQ(hundred.size(), 100u);
  EXPECT_EQ(hundred.front(), "x");
  EXPECT_EQ(hundred.back(), "##x");
  EXPECT_EQ(pieces(std::string(101, 'x')), (Pieces{"[UNK]"}));
  // Counted in code points after accent stripping (200 bytes of "é" are 100 "e").
  std::string accents;
  for (int i = 0; i < 100; ++i)
    accents += "\xC3\xA9";
  EXPECT_EQ(pieces(accents).size(), 100u);
  EXPECT_EQ(pieces(accents + "\xC3\xA9"), (Pieces{"[UNK]"}));
}

TEST(WordPiece, ControlCharactersAreDroppedAndWhitespaceSeparates) {
  EXPECT_EQ(pieces(std::string("hel\x01lo\x7Fworld", 13)), (Pieces{"[UNK]"}));  // helloworld
  EXPECT_EQ(pieces(std::string("hel\0lo", 6)), (Pieces{"hello"}));
  EXPECT_EQ(pieces("hel\xEF\xBF\xBDlo"), (Pieces{"hello"}));  // U+FFFD
  EXPECT_EQ(pieces("hel\xE2\x80\x8Blo"), (Pieces{"hello"}));  // U+200B, a format character
  EXPECT_EQ(pieces("hello\tworld\r\nhello\xC2\xA0world\xE2\x80\xA8!"),
            (Pieces{"hello", "world", "hello", "world", "!"}));
  EXPECT_EQ(pieces("hello\vworld"), (Pieces{"[UNK]"}));  // \v is a control: dropped
}

TEST(WordPiece, EmptyAndBlankInputGiveNoTokens) {
  EXPECT_TRUE(tokenizer().encode("").empty());
  EXPECT_TRUE(tokenizer().encode("  \n\t ").empty());
  EXPECT_TRUE(tokenizer().encode(std::string("\0\x01", 2)).empty());
}

TEST(WordPiece, FinalSigmaAndDottedCapitalIFollowUnicodeLowerCasing) {
  EXPECT_EQ(pieces("ΟΔΟΣ"), (Pieces{"ο", "##δ", "##ος"}));
  EXPECT_EQ(pieces("Σ"), (Pieces{"σ"}));  // no letter before: not final
  // U+0130 lower-cases to "i" + U+0307, whose dot strip accents then removes.
  EXPECT_EQ(pieces("\xC4\xB0stanbul"), (Pieces{"i", "##stanbul"}));
}

TEST(WordPiece, InvalidUtf8BytesAreDroppedAndCounted) {
  size_t dropped = 0;
  EXPECT_EQ(tokenizer().encode("hel\xFFlo", &dropped), tokenizer().encode("hello"));
  EXPECT_EQ(dropped, 1u);
  dropped = 0;
  tokenizer().encode("\xC0\xAF \xED\xA0\x80 \xF4\x90\x80\x80 \xE2\x82", &dropped);
  EXPECT_EQ(dropped, 2u + 3u + 4u + 2u);
}

TEST(WordPiece, RandomBytesGiveIdsInTheVocabulary) {
  // Any byte string, valid UTF-8 or not: ids within the vocabulary, never a crash.
  uint64_t x = 88172645463325252ull;
  for (int n = 0; n < 2000; ++n) {
    std::string bytes(static_cast<size_t>(n % 64), '\0');
    for (char &c : bytes) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = static_cast<char>(x);
    }
    for (int32_t id : tokenizer().encode(bytes)) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, tokenizer().vocab().size());
    }
  }
}

TEST(Utf8, DecodesEveryLengthAndRefusesWhatIsIllFormed) {
  EXPECT_EQ(utf8_decode("a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x90\xB3"), U"a\u00E9\u4E2D\U0001F433");
  size_t dropped = 0;
  // A lead byte cut short by a non-continuation byte: the byte after it starts anew.
  EXPECT_EQ(utf8_decode("\xE4\xB8"
                        "a",
                        &dropped),
            U"a");
  EXPECT_EQ(dropped, 2u);
  EXPECT_EQ(utf8_encode(U"a\u00E9\u4E2D\U0001F433"), "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x90\xB3");
}

TEST(UnicodeProperties, CanonicalOrderAndHangulDecompositionSurviveAccentStripping) {
  // U+1D16D (class 226) before U+1D165 (class 216): NFD swaps them.
  EXPECT_EQ(strip_accents(U"\U0001D16D\U0001D165"), U"\U0001D165\U0001D16D");
  EXPECT_EQ(strip_accents(U"\uAC01"), U"\u1100\u1161\u11A8");
  // Nonspacing marks go whether or not they are starters (U+034F has class 0).
  EXPECT_EQ(strip_accents(U"a\u034Fb\u0301\u0945"), U"ab");
  EXPECT_TRUE(is_punctuation(U'$'));
  EXPECT_TRUE(is_punctuation(U'\u2014'));
  EXPECT_FALSE(is_punctuation(U'a'));
  EXPECT_TRUE(is_chinese_char(U'\U00020000'));
  EXPECT_FALSE(is_chinese_char(U'\u3042'));  // hiragana is not
  EXPECT_TRUE(is_control(U'\u200B'));
  EXPECT_FALSE(is_control(U'\t'));
  EXPECT_TRUE(is_whitespace(U'\u3000'));
}

TEST(Vocabulary, FindsTheSpecialTokensAndRefusesBadFiles) {
  const Vocabulary &v = tokenizer().vocab();
  EXPECT_EQ(v.pad_id(), 0);
  EXPECT_EQ(v.unk_id(), 100);
  EXPECT_EQ(v.cls_id(), 101);
  EXPECT_EQ(v.sep_id(), 102);
  EXPECT_EQ(v.mask_id(), 103);
  EXPECT_EQ(v.find("##aff"), 107);
  EXPECT_EQ(v.find("nope"), -1);

  ScratchDir dir("bert_vocab");
  auto load_error = [&](const std::string &name, const std::string &content) {
    write_bytes(dir / name, content);
    return error_of([&] { Vocabulary::load(dir / name); });
  };
  const std::string missing = error_of([&] { Vocabulary::load(dir / "missing.txt"); });
  EXPECT_NE(missing.find("missing.txt"), std::string::npos) << missing;
  EXPECT_NE(missing.find("cannot be opened"), std::string::npos) << missing;
  EXPECT_NE(load_error("empty.txt", "").find("empty.txt: is empty"), std::string::npos);
  EXPECT_NE(load_error("blank.txt", "[PAD]\n\n[UNK]\n").find("blank.txt: line 2 is empty"),
            std::string::npos);
  EXPECT_NE(load_error("twice.txt", "[PAD]\na\na\n").find("token 'a' on line 3 repeats line 2"),
            std::string::npos);
  EXPECT_NE(load_error("space.txt", "[PAD]\na b\n").find("line 2 ('a b') holds whitespace"),
            std::string::npos);
  const std::string nospecial = load_error("gpt2.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n");
  EXPECT_NE(nospecial.find("gpt2.txt: has no [MASK] token"), std::string::npos) << nospecial;
  // A JSON vocabulary (GPT-2's encoder.json) is not a vocab.txt.
  const std::string json = load_error("encoder.json", "{\"!\": 0, \"\\\"\": 1}");
  EXPECT_NE(json.find("encoder.json: looks like JSON"), std::string::npos) << json;
  EXPECT_NE(load_error("vocab.json", "[\"[PAD]\", \"\u2581\"]").find("vocab.json: looks like JSON"),
            std::string::npos);
  // A long bad line is quoted cut short.
  const std::string long_line = load_error("long.txt", "[PAD]\n" + std::string(300, 'a') + " b\n");
  EXPECT_LT(long_line.size(), 200u) << long_line;
  // Windows line ends are read as line ends.
  write_bytes(dir / "crlf.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\n[MASK]\r\nthe\r\n");
  EXPECT_EQ(Vocabulary::load(dir / "crlf.txt").find("the"), 5);
  // The tokenizer's load names the file too.
  EXPECT_NE(error_of([&] { WordPieceTokenizer::load(dir / "gpt2.txt"); }).find("gpt2.txt"),
            std::string::npos);
}

}  // namespace
}  // namespace bert::test
