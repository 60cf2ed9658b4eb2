// zrt-bert-prepare: BERT's text tools on the command line; apps/data/prepare --model bert
// runs `examples` to make the files zrt-bert trains on.
//
//   zrt-bert-prepare --vocab VOCAB.txt examples --out-dir DIR [--val-fraction 0.1] FILE...
//       each FILE is one document: split into sentences, tokenized, written to
//       DIR/train.bin and DIR/val.bin (the last documents, by --val-fraction)
//   zrt-bert-prepare --vocab VOCAB.txt encode [--pieces] TEXT   ids (or pieces) as JSON
//   zrt-bert-prepare --vocab VOCAB.txt sentences FILE           one sentence per line
//   zrt-bert-prepare --vocab VOCAB.txt info FILE.bin            checks an example file
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/example_file.hpp"
#include "data/sentence_splitter.hpp"
#include "files/regular_file.hpp"
#include "tokenizer/wordpiece.hpp"

namespace {

std::string read_text(const std::string &path) {
  try {
    return files::read_regular(path);
  } catch (const files::Error &e) {
    throw std::runtime_error(fmt::format("{}: cannot open: {}", path, e.reason()));
  }
}

int examples(const bert::WordPieceTokenizer &tok, const std::string &out_dir, double val_fraction,
             const std::vector<std::string> &files) {
  bert::ExampleCorpus corpus;
  size_t bytes = 0, unknown = 0;
  std::vector<int32_t> ids;
  for (const std::string &file : files) {
    const std::string text = read_text(file);
    bytes += text.size();
    size_t dropped = 0;
    for (std::string_view sentence : bert::split_sentences(text)) {
      ids.clear();
      tok.encode_append(sentence, ids, &dropped);
      for (int32_t id : ids)
        unknown += id == tok.vocab().unk_id();
      corpus.add_sentence(ids);
    }
    corpus.end_document();
    if (dropped)
      fmt::print(stderr, "zrt-bert-prepare: warning: {}: {} bytes of invalid UTF-8 dropped\n", file,
                 dropped);
  }
  const size_t docs = corpus.documents();
  if (docs == 0) throw std::runtime_error("the files hold no text");
  // Whole documents go to val, so that no pair of val mixes with train.
  size_t nval = static_cast<size_t>(std::llround(static_cast<double>(docs) * val_fraction));
  if (val_fraction > 0 && nval == 0) nval = 1;
  if (nval >= docs)
    throw std::runtime_error(fmt::format(
        "{} document(s) cannot be split into train and val ({} for val): give more files or "
        "--val-fraction 0",
        docs, nval));
  std::filesystem::create_directories(out_dir);
  const std::filesystem::path dir(out_dir);
  bert::write_example_file(dir / "train.bin", corpus, 0, docs - nval, tok.vocab());
  if (nval > 0) bert::write_example_file(dir / "val.bin", corpus, docs - nval, docs, tok.vocab());
  fmt::print(
      "zrt-bert-prepare: {} file(s), {} bytes -> {} documents, {} sentences, {} tokens ({:.2f} "
      "bytes/token, {} [UNK]); {} documents train, {} val in {}\n",
      files.size(), bytes, docs, corpus.sentences(), corpus.token_ids.size(),
      static_cast<double>(bytes) /
          static_cast<double>(std::max<size_t>(1, corpus.token_ids.size())),
      unknown, docs - nval, nval, out_dir);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"zrt-bert-prepare: BERT's uncased WordPiece tokenizer and example files"};
  app.require_subcommand(1);
  std::string vocab_path;
  app.add_option("--vocab", vocab_path, "Google's vocab.txt form (tokenizer/bert-vocab.txt)")
      ->required();

  auto *ex = app.add_subcommand("examples", "text files -> train.bin and val.bin");
  std::string out_dir;
  double val_fraction = 0.1;
  std::vector<std::string> files;
  ex->add_option("--out-dir", out_dir, "where to write train.bin and val.bin")->required();
  ex->add_option("--val-fraction", val_fraction, "share of the documents for val.bin")
      ->check(CLI::Range(0.0, 0.9));
  ex->add_option("files", files, "text files, one document each")->required();

  auto *enc = app.add_subcommand("encode", "the token ids of a text, as a JSON array");
  std::string text;
  bool pieces = false;
  enc->add_option("text", text, "the text")->required();
  enc->add_flag("--pieces", pieces, "print the pieces instead of their ids");

  auto *sen = app.add_subcommand("sentences", "the sentences of a text file, one per line");
  std::string text_file;
  sen->add_option("file", text_file, "text file")->required();

  auto *info = app.add_subcommand("info", "check an example file and print its counts");
  std::string example_file;
  info->add_option("file", example_file, "example file (train.bin or val.bin)")->required();

  CLI11_PARSE(app, argc, argv);
  try {
    if (*sen) {
      // Splitting needs no vocabulary.
      const std::string content = read_text(text_file);  // the sentences view it
      for (std::string_view s : bert::split_sentences(content))
        fmt::print("{}\n", s);
      return 0;
    }
    const bert::WordPieceTokenizer tok = bert::WordPieceTokenizer::load(vocab_path);
    if (*ex) return examples(tok, out_dir, val_fraction, files);
    if (*enc) {
      if (pieces)
        fmt::print("{}\n", nlohmann::json(tok.pieces(text)).dump());
      else
        fmt::print("[{}]\n", fmt::join(tok.encode(text), ", "));
      return 0;
    }
    const bert::ExampleFile f = bert::ExampleFile::open(example_file, tok.vocab());
    fmt::print("{}\n", nlohmann::json{{"file", example_file},
                                      {"documents", f.documents()},
                                      {"sentences", f.sentences()},
                                      {"tokens", f.tokens()},
                                      {"vocab_size", tok.vocab().size()}}
                           .dump());
  } catch (const std::exception &e) {
    fmt::print(stderr, "zrt-bert-prepare: {}\n", e.what());
    return 1;
  }
  return 0;
}
