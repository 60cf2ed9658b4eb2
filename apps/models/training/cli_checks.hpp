// Checks of numeric options that say what they want. CLI11's PositiveNumber and
// NonNegativeNumber report their bound as DBL_MAX written out in full ("not in range
// 0.000000 to 1797693134862315708145...", 300 digits).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <string>

namespace training {

inline CLI::Validator number_at_least(double lowest, bool strict, const char *words) {
  return CLI::Validator(
      [=](std::string &text) -> std::string {
        char *end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || (strict ? !(v > lowest) : !(v >= lowest)))
          return std::string("must be ") + words + ", got " + text;
        return std::string();
      },
      words);
}

inline const CLI::Validator kPositive = number_at_least(0, true, "a positive number");
inline const CLI::Validator kNonNegative = number_at_least(0, false, "a number >= 0");

}  // namespace training
