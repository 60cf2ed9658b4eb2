// The sentence splitter's rules (sentence_splitter.hpp), one test each.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data/sentence_splitter.hpp"

namespace bert {
namespace {

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view s : split_sentences(text))
    out.emplace_back(s);
  return out;
}

using Sentences = std::vector<std::string>;

TEST(Sentences, EndAtATerminatorBeforeACapitalOrAQuote) {
  EXPECT_EQ(split("Call me Ishmael. Some years ago! Why? \"Because.\" (Applause.) Next."),
            (Sentences{"Call me Ishmael.", "Some years ago!", "Why?", "\"Because.\"", "(Applause.)",
                       "Next."}));
  EXPECT_EQ(split("He said \u201cno.\u201d Then left."),
            (Sentences{"He said \u201cno.\u201d", "Then left."}));
}

TEST(Sentences, DoNotEndBeforeALowerCaseWordOrADigitOrWithoutSpace) {
  EXPECT_EQ(split("It cost 3.5 dollars. so it goes. 1999 was a year."),
            (Sentences{"It cost 3.5 dollars. so it goes. 1999 was a year."}));
  EXPECT_EQ(split("Wait...What"), (Sentences{"Wait...What"}));
}

TEST(Sentences, AbbreviationsAndInitialsDoNotEndOne) {
  EXPECT_EQ(
      split("Mr. Starbuck met Dr. Bunger and J. Smith at St. Paul. The U.S. Navy came."),
      (Sentences{"Mr. Starbuck met Dr. Bunger and J. Smith at St. Paul.", "The U.S. Navy came."}));
  // The word is the letters just before the dot, even after a dash or a bracket.
  EXPECT_EQ(split("my mate\u2014Mr. Flask. (Mrs. Hussey) came."),
            (Sentences{"my mate\u2014Mr. Flask.", "(Mrs. Hussey) came."}));
}

TEST(Sentences, BlankLinesEndOneAndSingleLineEndsDoNot) {
  EXPECT_EQ(split("CHAPTER 1\n\nCall me\nIshmael\n \t\nthe end"),
            (Sentences{"CHAPTER 1", "Call me\nIshmael", "the end"}));
}

TEST(Sentences, EmptyTextHasNone) {
  EXPECT_TRUE(split("").empty());
  EXPECT_TRUE(split(" \n\n \n").empty());
}

}  // namespace
}  // namespace bert
