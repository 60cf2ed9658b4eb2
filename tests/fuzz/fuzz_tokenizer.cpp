// Fuzz target: GPT-2's byte-level BPE tokenizer (apps/models/gpt2/tokenizer). Any bytes, valid
// UTF-8 or not, must encode to ids inside the vocabulary that decode back to the same
// bytes; anything else aborts (the failure libFuzzer and the seeded driver report).
// The tokenizer's files come from ZRT_FUZZ_TOKENIZER_DIR (apps/data/prepare makes them).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_tokenizer.hpp"

namespace {

gpt2::BpeTokenizer &tokenizer() {
  static std::unique_ptr<gpt2::BpeTokenizer> t = [] {
    const char *dir = std::getenv("ZRT_FUZZ_TOKENIZER_DIR");
    if (dir == nullptr) {
      std::fprintf(stderr,
                   "fuzz_tokenizer: set ZRT_FUZZ_TOKENIZER_DIR (apps/data/cache/tokenizer)\n");
      std::abort();
    }
    return std::make_unique<gpt2::BpeTokenizer>(gpt2::BpeTokenizer::load_dir(dir));
  }();
  return *t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;  // long inputs only slow the search down
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  std::vector<int> ids = tokenizer().encode(text);
  for (int id : ids)
    if (id < 0 || id >= 50257) {
      std::fprintf(stderr, "fuzz_tokenizer: id %d outside the vocabulary\n", id);
      std::abort();
    }
  if (tokenizer().decode(ids) != text) {
    std::fprintf(stderr, "fuzz_tokenizer: decode(encode(x)) != x for %zu bytes\n", size);
    std::abort();
  }
  return 0;
}
