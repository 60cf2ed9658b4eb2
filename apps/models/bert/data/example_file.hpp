// BERT's example files: documents, split into sentences, as WordPiece ids; what
// zrt-bert-prepare writes and PretrainingExamples makes pairs from. Little-endian:
//   header (64 bytes)
//     char     magic[8]        "zrtbert" and a NUL (not llm.c's int32 20240520, so a
//                              GPT-2 token file is told apart and refused by name)
//     uint32   version         1
//     uint32   vocab_size      of the vocabulary the ids index
//     uint64   vocab_checksum  Vocabulary::checksum() of that vocabulary
//     uint64   documents, sentences, tokens
//     uint64   payload_checksum  XXH3-64 of every byte after the header
//     uint64   reserved (0)
//   payload
//     uint64   document_offsets[documents + 1]   first sentence of each document
//     uint64   sentence_offsets[sentences + 1]   first token of each sentence
//     uint16   token_ids[tokens]
// Offsets start at 0, end at the count and never decrease; no document or sentence is
// empty. The file is memory-mapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "files/mapped_file.hpp"
#include "tokenizer/vocabulary.hpp"

namespace bert {

/// Documents being collected for write_example_file.
struct ExampleCorpus {
  std::vector<uint64_t> document_offsets{0};
  std::vector<uint64_t> sentence_offsets{0};
  std::vector<uint16_t> token_ids;

  /// Appends a sentence to the current document; an empty one is left out. Throws
  /// std::out_of_range for an id outside [0, 65536).
  void add_sentence(std::span<const int32_t> ids);
  /// Ends the current document (nothing happens when it has no sentence).
  void end_document();
  /// Documents ended so far.
  size_t documents() const { return document_offsets.size() - 1; }
  /// Sentences added so far.
  size_t sentences() const { return sentence_offsets.size() - 1; }
};

/// Writes documents [first, last) of @p corpus to @p path for @p vocab, through a
/// temporary file renamed into place. Throws std::runtime_error naming the file.
void write_example_file(const std::filesystem::path &path, const ExampleCorpus &corpus,
                        size_t first, size_t last, const Vocabulary &vocab);

/// A checked, memory-mapped example file. Movable, not copyable.
class ExampleFile {
 public:
  static constexpr char kMagic[8] = {'z', 'r', 't', 'b', 'e', 'r', 't', '\0'};
  static constexpr uint32_t kVersion = 1;
  static constexpr size_t kHeaderBytes = 64;

  /// Opens and checks @p path against @p vocab: magic, version, vocabulary size and
  /// checksum, sizes against the file's length, offsets, ids below the vocabulary size,
  /// the payload checksum. Throws std::runtime_error naming the file and the reason (a
  /// GPT-2 llm.c token file is named as such).
  static ExampleFile open(const std::filesystem::path &path, const Vocabulary &vocab);
  /// The same check against a vocabulary known by its size and checksum only.
  static ExampleFile open(const std::filesystem::path &path, int32_t vocab_size,
                          uint64_t vocab_checksum);

  ExampleFile(ExampleFile &&other) noexcept = default;
  ExampleFile &operator=(ExampleFile &&other) noexcept = default;

  /// Counts from the header (checked against the file). Accessors are const and
  /// thread-safe: the mapping is read-only.
  size_t documents() const { return documents_; }
  size_t sentences() const { return sentences_; }
  size_t tokens() const { return tokens_; }
  /// Sentences [first, last) of document @p d.
  std::pair<size_t, size_t> document(size_t d) const {
    return {document_offsets_[d], document_offsets_[d + 1]};
  }
  /// Tokens [first, last) of sentence @p s, as offsets into token_ids().
  std::pair<size_t, size_t> sentence(size_t s) const {
    return {sentence_offsets_[s], sentence_offsets_[s + 1]};
  }
  /// Every token of the file, sentence after sentence.
  std::span<const uint16_t> token_ids() const { return {token_ids_, tokens_}; }
  /// The file's name, for messages.
  const std::filesystem::path &path() const { return file_.path(); }

 private:
  ExampleFile() = default;

  files::MappedFile file_;
  size_t documents_ = 0, sentences_ = 0, tokens_ = 0;
  const uint64_t *document_offsets_ = nullptr;
  const uint64_t *sentence_offsets_ = nullptr;
  const uint16_t *token_ids_ = nullptr;  // the pointers are into file_'s bytes
};

}  // namespace bert
