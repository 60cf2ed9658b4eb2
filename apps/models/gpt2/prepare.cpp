// zrt-tokenize: GPT-2's tokenizer on the command line, to turn text into the token files
// zrt-gpt2 trains on (apps/data/prepare uses it) and back.
//
//   zrt-tokenize encode --tokenizer DIR --out-dir DIR [--val-fraction 0.1] FILE...
//       each FILE is one document, preceded by <|endoftext|>; writes DIR/train.bin and
//       DIR/val.bin (llm.c format) after checking that every file decodes back exactly
//   zrt-tokenize decode --tokenizer DIR FILE.bin      the text of a token file
//   zrt-tokenize ids --tokenizer DIR TEXT             the token ids of TEXT, as JSON
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/token_file.hpp"
#include "files/regular_file.hpp"
#include "tokenizer/bpe_tokenizer.hpp"
#include "training/cli_checks.hpp"

namespace {

std::string read_text(const std::string &path) {
  try {
    return files::read_regular(path);
  } catch (const files::Error &e) {
    throw std::runtime_error(fmt::format("{}: cannot open: {}", path, e.reason()));
  }
}

std::vector<uint16_t> to_u16(const std::vector<int> &ids) {
  return std::vector<uint16_t>(ids.begin(), ids.end());
}

int encode(const std::string &tokenizer_dir, const std::string &out_dir, double val_fraction,
           gpt2::TokenFormat format, const std::vector<std::string> &files) {
  gpt2::BpeTokenizer tok = gpt2::BpeTokenizer::load_dir(tokenizer_dir);
  if (tok.eot() < 0) throw std::runtime_error("the vocabulary has no <|endoftext|> token");
  std::vector<int> all;
  size_t bytes = 0;
  for (const std::string &file : files) {
    std::string text = read_text(file);
    bytes += text.size();
    std::vector<int> ids = tok.encode(text);
    // The exact round trip is what makes byte-level BPE lossless; check it on the data.
    if (tok.decode(ids) != text)
      throw std::runtime_error(
          fmt::format("{}: decoding the tokens does not give back the text", file));
    all.push_back(tok.eot());
    all.insert(all.end(), ids.begin(), ids.end());
  }
  // The last val_fraction of the tokens is the validation split.
  size_t nval = static_cast<size_t>(static_cast<double>(all.size()) * val_fraction);
  std::vector<int> train(all.begin(), all.end() - static_cast<std::ptrdiff_t>(nval));
  std::vector<int> val(all.end() - static_cast<std::ptrdiff_t>(nval), all.end());
  std::filesystem::create_directories(out_dir);
  gpt2::write_token_file(std::filesystem::path(out_dir) / "train.bin", to_u16(train), format);
  if (!val.empty())
    gpt2::write_token_file(std::filesystem::path(out_dir) / "val.bin", to_u16(val), format);
  fmt::print(
      "zrt-tokenize: {} file(s), {} bytes -> {} tokens ({:.2f} bytes/token): {} train, {} "
      "val in {} (round trip exact)\n",
      files.size(), bytes, all.size(), static_cast<double>(bytes) / all.size(), train.size(),
      val.size(), out_dir);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"zrt-tokenize: GPT-2's byte-level BPE tokenizer (encoder.json + vocab.bpe)"};
  app.require_subcommand(1);
  std::string tokenizer_dir;
  app.add_option("--tokenizer", tokenizer_dir, "folder with encoder.json and vocab.bpe")
      ->required();

  auto *enc = app.add_subcommand("encode", "text files -> train.bin and val.bin");
  std::string out_dir, format_name = "llmc";
  double val_fraction = 0.1;
  std::vector<std::string> files;
  enc->add_option("--out-dir", out_dir, "where to write train.bin and val.bin")->required();
  enc->add_option("--val-fraction", val_fraction, "share of the tokens for val.bin")
      ->check(CLI::Range(0.0, 0.9));
  enc->add_option("--format", format_name, "llmc (256-int header) or raw (nanoGPT)")
      ->check(CLI::IsMember({"llmc", "raw"}));
  enc->add_option("files", files, "text files, one document each")->required();

  auto *dec = app.add_subcommand("decode", "a token file -> its text on stdout");
  std::string token_file;
  dec->add_option("file", token_file, "token file (llm.c or raw)")->required();

  auto *ids = app.add_subcommand("ids", "the token ids of a text, as a JSON array");
  std::string text;
  ids->add_option("text", text, "the text")->required();

  CLI11_PARSE(app, argc, argv);
  try {
    if (*enc)
      return encode(tokenizer_dir, out_dir, val_fraction, gpt2::parse_token_format(format_name),
                    files);
    gpt2::BpeTokenizer tok = gpt2::BpeTokenizer::load_dir(tokenizer_dir);
    if (*dec) {
      gpt2::TokenFile f =
          gpt2::TokenFile::open(token_file, gpt2::TokenFormat::automatic, tok.vocab_size());
      std::vector<int> all(f.tokens().begin(), f.tokens().end());
      std::string out = tok.decode(all);
      std::fwrite(out.data(), 1, out.size(), stdout);
    } else {
      fmt::print("[{}]\n", fmt::join(tok.encode(text), ", "));
    }
  } catch (const std::exception &e) {
    fmt::print(stderr, "zrt-tokenize: {}\n", e.what());
    return 1;
  }
  return 0;
}
