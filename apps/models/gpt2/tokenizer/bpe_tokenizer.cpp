#include "bpe_tokenizer.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <climits>
#include <sstream>
#include <stdexcept>

#include "data/data_location.hpp"
#include "files/regular_file.hpp"
#include "pretokenize.hpp"

namespace gpt2 {
namespace {

[[noreturn]] void fail(const std::filesystem::path &file, const std::string &what) {
  throw std::runtime_error(fmt::format("tokenizer file {}: {}", file.string(), what));
}

std::string read_file(const std::filesystem::path &file) {
  try {
    return files::read_regular(file);
  } catch (const files::Error &e) {
    fail(file, fmt::format("cannot be opened: {} (run {} to fetch GPT-2's tokenizer)", e.reason(),
                           prepare_command()));
  }
}

void append_utf8(std::string &out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// GPT-2's bytes_to_unicode(): every byte is shown as a printable character, so that the
// vocabulary files hold text. Printable Latin-1 bytes stand for themselves; the others
// map to U+0100 upwards in byte order.
std::vector<std::string> byte_symbols() {
  std::vector<std::string> symbol(256);
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    append_utf8(symbol[static_cast<size_t>(b)], printable ? static_cast<char32_t>(b) : next++);
  }
  return symbol;
}

uint64_t pair_key(int left, int right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

BpeTokenizer BpeTokenizer::load_dir(const std::filesystem::path &dir) {
  return load(dir / "encoder.json", dir / "vocab.bpe");
}

BpeTokenizer BpeTokenizer::load(const std::filesystem::path &encoder_json,
                                const std::filesystem::path &vocab_bpe) {
  BpeTokenizer tok;

  // encoder.json: {"token string": id, ...} with ids 0..n-1, each once.
  nlohmann::json enc;
  try {
    enc = nlohmann::json::parse(read_file(encoder_json));
  } catch (const nlohmann::json::exception &e) {
    fail(encoder_json, fmt::format("not valid JSON: {}", e.what()));
  }
  if (!enc.is_object() || enc.empty())
    fail(encoder_json, "expected a JSON object mapping token strings to ids");
  if (enc.size() > 65536)
    fail(encoder_json,
         fmt::format("{} tokens; token files hold 16-bit ids, at most 65536", enc.size()));
  const int n = static_cast<int>(enc.size());
  std::unordered_map<std::string, int> id_of;
  std::vector<std::string> text(static_cast<size_t>(n));
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (auto it = enc.begin(); it != enc.end(); ++it) {
    if (!it.value().is_number_integer())
      fail(encoder_json, fmt::format("the id of token \"{}\" is not an integer", it.key()));
    long long id = it.value().get<long long>();
    if (id < 0 || id >= n || seen[static_cast<size_t>(id)])
      fail(encoder_json, fmt::format("token \"{}\" has id {}; ids must be 0..{} and unique",
                                     it.key(), id, n - 1));
    seen[static_cast<size_t>(id)] = true;
    text[static_cast<size_t>(id)] = it.key();
    id_of.emplace(it.key(), static_cast<int>(id));
  }

  // Byte tokens, and every token's raw bytes (the inverse of byte_symbols()).
  std::vector<std::string> symbols = byte_symbols();
  std::unordered_map<std::string, uint8_t> byte_of;
  for (int b = 0; b < 256; ++b) {
    auto it = id_of.find(symbols[static_cast<size_t>(b)]);
    if (it == id_of.end())
      fail(encoder_json,
           fmt::format("no token for byte 0x{:02x}; not a byte-level BPE vocabulary", b));
    tok.byte_token_[b] = it->second;
    byte_of.emplace(symbols[static_cast<size_t>(b)], static_cast<uint8_t>(b));
  }
  tok.bytes_.resize(static_cast<size_t>(n));
  for (int id = 0; id < n; ++id) {
    const std::string &t = text[static_cast<size_t>(id)];
    std::string raw;
    // Walk the token's characters; each must be one of the 256 byte symbols.
    for (size_t i = 0; i < t.size();) {
      size_t len = 1;
      auto lead = static_cast<uint8_t>(t[i]);
      if (lead >= 0xC0) len = lead >= 0xE0 ? 3 : 2;
      auto it = byte_of.find(t.substr(i, len));
      if (it == byte_of.end()) {
        if (t == "<|endoftext|>") break;  // the special token: no bytes of its own
        fail(encoder_json, fmt::format("token {} (\"{}\") has a character that is not a byte "
                                       "symbol",
                                       id, t));
      }
      raw += static_cast<char>(it->second);
      i += len;
    }
    if (t == "<|endoftext|>") {
      tok.eot_ = id;
      raw = t;  // decodes to its name, as in GPT-2
    }
    tok.bytes_[static_cast<size_t>(id)] = std::move(raw);
  }

  // vocab.bpe: a "#version" line, then one merge "left right" per line, in rank order.
  std::istringstream merges(read_file(vocab_bpe));
  std::string line;
  int line_no = 0, rank = 0;
  while (std::getline(merges, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      fail(vocab_bpe, fmt::format("line {}: expected two symbols separated by one space, got "
                                  "\"{}\"",
                                  line_no, line));
    std::string left = line.substr(0, space), right = line.substr(space + 1);
    auto l = id_of.find(left), r = id_of.find(right), m = id_of.find(left + right);
    if (l == id_of.end() || r == id_of.end() || m == id_of.end())
      fail(vocab_bpe, fmt::format("line {}: merge \"{}\" uses a token that encoder.json lacks",
                                  line_no, line));
    tok.merges_.emplace(pair_key(l->second, r->second), std::make_pair(rank++, m->second));
  }
  if (rank == 0) fail(vocab_bpe, "holds no merges");
  return tok;
}

std::vector<int> BpeTokenizer::bpe(std::string_view word) const {
  std::vector<int> ids;
  ids.reserve(word.size());
  for (char ch : word)
    ids.push_back(byte_token_[static_cast<uint8_t>(ch)]);
  // As encoder.py: merge the lowest-ranked adjacent pair, every occurrence left to right,
  // until no adjacent pair is a merge.
  while (ids.size() > 1) {
    int best_rank = INT_MAX, merged = -1, left = -1, right = -1;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      auto it = merges_.find(pair_key(ids[i], ids[i + 1]));
      if (it != merges_.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        merged = it->second.second;
        left = ids[i];
        right = ids[i + 1];
      }
    }
    if (merged < 0) break;
    size_t out = 0;
    for (size_t i = 0; i < ids.size(); ++out) {
      if (i + 1 < ids.size() && ids[i] == left && ids[i + 1] == right) {
        ids[out] = merged;
        i += 2;
      } else {
        ids[out] = ids[i++];
      }
    }
    ids.resize(out);
  }
  return ids;
}

std::vector<int> BpeTokenizer::encode(std::string_view text) {
  std::vector<int> out;
  out.reserve(text.size() / 3);
  for (std::string_view word : pretokenize(text)) {
    auto it = cache_.find(std::string(word));
    if (it == cache_.end()) it = cache_.emplace(std::string(word), bpe(word)).first;
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return out;
}

const std::string &BpeTokenizer::token_bytes(int id) const {
  if (id < 0 || id >= vocab_size())
    throw std::runtime_error(
        fmt::format("token id {} is outside the vocabulary (0..{})", id, vocab_size() - 1));
  return bytes_[static_cast<size_t>(id)];
}

std::string BpeTokenizer::decode(std::span<const int> ids) const {
  std::string out;
  for (int id : ids)
    out += token_bytes(id);
  return out;
}

}  // namespace gpt2
