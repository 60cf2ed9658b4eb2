#include "data/example_file.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>
#include <stdexcept>

#include "files/output_file.hpp"

namespace bert {
namespace {

constexpr const char *kKind = "BERT example file";

[[noreturn]] void fail(const std::filesystem::path &path, const std::string &what) {
  files::fail_file(kKind, path, what);
}

// llm.c's token files (GPT-2's) begin with this int32.
constexpr int32_t kLlmcMagic = 20240520;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t vocab_size;
  uint64_t vocab_checksum;
  uint64_t documents, sentences, tokens;
  uint64_t payload_checksum;
  uint64_t reserved;
};
static_assert(sizeof(Header) == ExampleFile::kHeaderBytes);

template <typename T>
void put(std::string &out, const T *data, size_t n) {
  out.append(reinterpret_cast<const char *>(data), n * sizeof(T));
}

}  // namespace

void ExampleCorpus::add_sentence(std::span<const int32_t> ids) {
  if (ids.empty()) return;
  for (int32_t id : ids) {
    if (id < 0 || id > 65535)
      throw std::out_of_range(fmt::format("token id {} does not fit an example file's uint16", id));
    token_ids.push_back(static_cast<uint16_t>(id));
  }
  sentence_offsets.push_back(token_ids.size());
}

void ExampleCorpus::end_document() {
  if (sentence_offsets.size() - 1 > document_offsets.back())
    document_offsets.push_back(sentence_offsets.size() - 1);
}

void write_example_file(const std::filesystem::path &path, const ExampleCorpus &corpus,
                        size_t first, size_t last, const Vocabulary &vocab) {
  if (first > last || last > corpus.documents())
    throw std::invalid_argument("write_example_file: documents out of range");
  const uint64_t s0 = corpus.document_offsets[first], s1 = corpus.document_offsets[last];
  const uint64_t t0 = corpus.sentence_offsets[s0], t1 = corpus.sentence_offsets[s1];
  std::string payload;
  for (size_t d = first; d <= last; ++d) {
    const uint64_t v = corpus.document_offsets[d] - s0;
    put(payload, &v, 1);
  }
  for (uint64_t s = s0; s <= s1; ++s) {
    const uint64_t v = corpus.sentence_offsets[s] - t0;
    put(payload, &v, 1);
  }
  put(payload, corpus.token_ids.data() + t0, t1 - t0);

  Header h{};
  std::memcpy(h.magic, ExampleFile::kMagic, sizeof(h.magic));
  h.version = ExampleFile::kVersion;
  h.vocab_size = static_cast<uint32_t>(vocab.size());
  h.vocab_checksum = vocab.checksum();
  h.documents = last - first;
  h.sentences = s1 - s0;
  h.tokens = t1 - t0;
  h.payload_checksum = XXH3_64bits(payload.data(), payload.size());

  try {
    files::write_replacing(path, [&](files::OutputFile &out) {
      out.write(&h, sizeof(h));
      out.write(payload.data(), payload.size());
    });
  } catch (const files::Error &e) {
    fail(path, e.reason());
  }
}

ExampleFile ExampleFile::open(const std::filesystem::path &path, const Vocabulary &vocab) {
  return open(path, vocab.size(), vocab.checksum());
}

ExampleFile ExampleFile::open(const std::filesystem::path &path, int32_t vocab_size,
                              uint64_t vocab_checksum) {
  ExampleFile f;
  f.file_ =
      files::MappedFile(path, kKind, "apps/data/prepare --model bert writes train.bin and val.bin");
  const size_t bytes = f.file_.bytes().size();
  const unsigned char *base = f.file_.bytes().data();

  int32_t first_int = 0;
  if (bytes >= sizeof(first_int)) std::memcpy(&first_int, base, sizeof(first_int));
  if (first_int == kLlmcMagic)
    fail(path, fmt::format("this is a GPT-2 (llm.c) token file (magic {}), not a BERT example "
                           "file: zrt-bert trains on the files apps/data/prepare --model bert "
                           "writes (data/bert/CORPUS/train.bin)",
                           kLlmcMagic));
  if (bytes < kHeaderBytes)
    fail(path, fmt::format("{} bytes is shorter than the {}-byte header", bytes, kHeaderBytes));
  Header h;
  std::memcpy(&h, base, sizeof(h));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0)
    fail(path,
         "bad magic: not a BERT example file (they begin with \"zrtbert\"; "
         "zrt-bert-prepare writes them)");
  if (h.version != kVersion)
    fail(path, fmt::format("format version {} is not supported (this build reads version {})",
                           h.version, kVersion));
  if (h.vocab_size != static_cast<uint32_t>(vocab_size) || h.vocab_checksum != vocab_checksum)
    fail(path, fmt::format("made with another vocabulary ({} tokens, checksum {:016x}) than the "
                           "one given ({} tokens, checksum {:016x}): prepare it again with this "
                           "vocabulary",
                           h.vocab_size, h.vocab_checksum, vocab_size, vocab_checksum));
  // Sizes in bytes, checked against overflow before they are added up.
  const uint64_t limit = bytes / 2;
  if (h.documents >= limit || h.sentences >= limit || h.tokens >= limit)
    fail(path, fmt::format("the header's counts ({} documents, {} sentences, {} tokens) cannot "
                           "fit its {} bytes",
                           h.documents, h.sentences, h.tokens, bytes));
  const uint64_t want = kHeaderBytes + 8 * (h.documents + 1) + 8 * (h.sentences + 1) + 2 * h.tokens;
  if (want != bytes)
    fail(path, fmt::format("the header announces {} documents, {} sentences and {} tokens ({} "
                           "bytes) but the file has {} bytes{}",
                           h.documents, h.sentences, h.tokens, want, bytes,
                           bytes < want ? " (truncated?)" : ""));
  const uint64_t sum = XXH3_64bits(base + kHeaderBytes, bytes - kHeaderBytes);
  if (sum != h.payload_checksum)
    fail(path, fmt::format("checksum mismatch (the payload hashes to {:016x}, the header says "
                           "{:016x}): the file is damaged",
                           sum, h.payload_checksum));
  f.documents_ = h.documents;
  f.sentences_ = h.sentences;
  f.tokens_ = h.tokens;
  f.document_offsets_ = reinterpret_cast<const uint64_t *>(base + kHeaderBytes);
  f.sentence_offsets_ = f.document_offsets_ + h.documents + 1;
  f.token_ids_ = reinterpret_cast<const uint16_t *>(f.sentence_offsets_ + h.sentences + 1);

  // Offsets: from 0 to the count, every document and sentence non-empty.
  auto check_offsets = [&](const uint64_t *o, uint64_t n, uint64_t end, const char *what,
                           const char *of) {
    if (o[0] != 0) fail(path, fmt::format("the first {} does not start at {} 0", what, of));
    for (uint64_t i = 0; i < n; ++i)
      if (o[i + 1] <= o[i] || o[i + 1] > end)
        fail(path, fmt::format("{} {} spans {}s [{}, {}): offsets must increase within [0, {}]",
                               what, i, of, o[i], o[i + 1], end));
    if (o[n] != end)
      fail(path,
           fmt::format("the last {} ends at {} {}, not at the count {}", what, of, o[n], end));
  };
  check_offsets(f.document_offsets_, h.documents, h.sentences, "document", "sentence");
  check_offsets(f.sentence_offsets_, h.sentences, h.tokens, "sentence", "token");
  for (size_t i = 0; i < f.tokens_; ++i)
    if (f.token_ids_[i] >= vocab_size)
      fail(path, fmt::format("token {} at position {} is outside the vocabulary of {}",
                             f.token_ids_[i], i, vocab_size));
  return f;
}

}  // namespace bert
