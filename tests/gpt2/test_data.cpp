// Token files in llm.c's and nanoGPT's formats, with clear errors for broken ones (and for
// paths that are not regular files, refused without waiting on a FIFO, and writes the disk
// refuses), and the data loader's batches and sharding over ranks.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "../not_regular_files.hpp"
#include "data/data_loader.hpp"
#include "data/token_file.hpp"
#include "data_cache.hpp"

namespace gpt2::test {
namespace {

std::vector<uint16_t> iota_tokens(size_t n) {
  std::vector<uint16_t> t(n);
  std::iota(t.begin(), t.end(), uint16_t{0});
  return t;
}

// The message of TokenFile::open, without the scratch folder's name.
std::string open_error(const ScratchDir &dir, const std::string &name, TokenFormat format,
                       int vocab = 50257) {
  try {
    TokenFile::open(dir / name, format, vocab);
  } catch (const std::runtime_error &e) {
    std::string m = e.what();
    size_t at = m.find(dir.path().string());
    if (at != std::string::npos) m.replace(at, dir.path().string().size() + 1, "");
    return m;
  }
  return "opened";
}

void write_raw_bytes(const std::filesystem::path &path, const void *data, size_t bytes) {
  std::ofstream(path, std::ios::binary)
      .write(static_cast<const char *>(data), static_cast<std::streamsize>(bytes));
}

TEST(TokenFile, BothFormatsRoundTrip) {
  ScratchDir dir("zrt_tokens");
  std::vector<uint16_t> tokens = iota_tokens(1000);
  write_token_file(dir / "a.bin", tokens, TokenFormat::llmc);
  write_token_file(dir / "b.bin", tokens, TokenFormat::raw);
  EXPECT_EQ(std::filesystem::file_size(dir / "a.bin"), 1024 + 2000u);
  EXPECT_EQ(std::filesystem::file_size(dir / "b.bin"), 2000u);
  for (const char *name : {"a.bin", "b.bin"}) {
    TokenFile f = TokenFile::open(dir / name, TokenFormat::automatic, 50257);
    EXPECT_EQ(f.format(), std::string(name) == "a.bin" ? TokenFormat::llmc : TokenFormat::raw);
    EXPECT_EQ(std::vector<uint16_t>(f.tokens().begin(), f.tokens().end()), tokens);
  }
  // A raw file read as llm.c's is refused rather than misread.
  EXPECT_EQ(open_error(dir, "b.bin", TokenFormat::llmc),
            "token file b.bin: bad magic number 65536 in the header (llm.c token files begin "
            "with 20240520)");
}

TEST(TokenFile, WhatIsNotARegularFileIsRefusedWithoutWaitingNamingWhatItIs) {
  const ::test::NotRegularFiles paths("tokens");
  for (const ::test::NotRegular &p : paths.all()) {
    SCOPED_TRACE(p.path);
    std::string error;
    ASSERT_TRUE(::test::returns_within(
        [&] {
          try {
            TokenFile::open(p.path, TokenFormat::automatic, 50257);
          } catch (const std::runtime_error &e) {
            error = e.what();
          }
        },
        paths.fifo()))
        << "TokenFile::open blocked on " << p.path;
    EXPECT_NE(error.find("token file " + p.path + ": cannot open: it is " + p.kind),
              std::string::npos)
        << error;
  }
}

// A write the disk refuses (here ulimit -f, as a full disk would): the system's reason, and
// no partial file left behind.
TEST(TokenFile, AWriteTheDiskRefusesSaysWhyAndLeavesNoFile) {
  ScratchDir dir("zrt_tokens_full");
  rlimit before{};
  getrlimit(RLIMIT_FSIZE, &before);
  auto handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  rlimit small = before;
  small.rlim_cur = 64 << 10;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    write_token_file(dir / "big.bin", iota_tokens(100000), TokenFormat::llmc);
  } catch (const std::runtime_error &e) {
    error = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, handler);
  EXPECT_NE(error.find("cannot write: File too large"), std::string::npos) << error;
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "a partial file was left";
}

TEST(TokenFile, BrokenFilesSayWhatIsWrong) {
  ScratchDir dir("zrt_tokens_bad");
  int32_t header[256] = {20240520, 1, 10};
  write_raw_bytes(dir / "short.bin", header, sizeof(header) + 6);  // 10 announced, 3 there
  EXPECT_EQ(open_error(dir, "short.bin", TokenFormat::automatic),
            "token file short.bin: the header announces 10 tokens (1044 bytes with the header) "
            "but the file has 1030 bytes");
  header[1] = 2;
  write_raw_bytes(dir / "v2.bin", header, sizeof(header));
  EXPECT_EQ(open_error(dir, "v2.bin", TokenFormat::automatic),
            "token file v2.bin: header version 2 is not supported: version 1 holds uint16 GPT-2 "
            "tokens (version 2 is llm.c's uint32 format)");
  write_raw_bytes(dir / "tiny.bin", header, 100);
  EXPECT_EQ(open_error(dir, "tiny.bin", TokenFormat::automatic),
            "token file tiny.bin: 100 bytes is shorter than llm.c's 1024-byte header");
  write_raw_bytes(dir / "odd.bin", "abc", 3);
  EXPECT_EQ(open_error(dir, "odd.bin", TokenFormat::raw),
            "token file odd.bin: 3 bytes is not a whole number of uint16 tokens");
  write_raw_bytes(dir / "empty.bin", "", 0);
  EXPECT_EQ(open_error(dir, "empty.bin", TokenFormat::automatic),
            "token file empty.bin: holds no tokens");
  std::vector<uint16_t> ids = {1, 2, 50257, 3};
  write_token_file(dir / "range.bin", ids, TokenFormat::llmc);
  EXPECT_EQ(open_error(dir, "range.bin", TokenFormat::automatic),
            "token file range.bin: token 50257 at position 2 is outside the model's vocabulary "
            "of 50257");
  EXPECT_EQ(open_error(dir, "missing.bin", TokenFormat::automatic),
            "token file missing.bin: cannot open: No such file or directory (run "
            "apps/data/prepare, or pass --data DIR with train.bin and val.bin)");
  // auto reads raw tokens only from what cannot be an llm.c file or text.
  int32_t damaged[256] = {20240521, 1, 10};
  std::vector<char> bytes(sizeof(damaged) + 20, 0);
  std::memcpy(bytes.data(), damaged, sizeof(damaged));
  write_raw_bytes(dir / "magic.bin", bytes.data(), bytes.size());
  EXPECT_EQ(open_error(dir, "magic.bin", TokenFormat::automatic),
            "token file magic.bin: bad magic number 20240521 in an llm.c header (llm.c token "
            "files begin with 20240520; the token count 10 matches the file's size); "
            "--data-format raw reads it as raw tokens all the same");
  const std::string text(200, 'x');
  write_raw_bytes(dir / "text.bin", text.data(), text.size());
  EXPECT_NE(open_error(dir, "text.bin", TokenFormat::automatic).find("looks like text"),
            std::string::npos);
  EXPECT_EQ(open_error(dir, "text.bin", TokenFormat::raw), "opened");  // forced: as tokens
  EXPECT_THROW(parse_token_format("json"), std::invalid_argument);
}

TEST(DataLoader, ShardsBatchesOverRanks) {
  ScratchDir dir("zrt_loader");
  const int B = 2, T = 4, BT = B * T;
  std::vector<uint16_t> tokens = iota_tokens(5 * BT + 3);  // 43 tokens
  write_token_file(dir / "t.bin", tokens, TokenFormat::llmc);
  TokenFile f = TokenFile::open(dir / "t.bin", TokenFormat::automatic, 50257);
  DataLoader r0(f, B, T, 0, 2), r1(f, B, T, 1, 2);
  EXPECT_EQ(r0.batches_per_epoch(), 2);
  std::vector<int> in(BT), tg(BT);
  std::set<int> seen;
  for (int k = 0; k < 2; ++k) {
    for (DataLoader *l : {&r0, &r1}) {
      const int64_t start = l->position();
      l->next(in, tg);
      for (int i = 0; i < BT; ++i) {
        EXPECT_EQ(in[static_cast<size_t>(i)], start + i);
        EXPECT_EQ(tg[static_cast<size_t>(i)], start + i + 1);  // targets: shifted by one
        EXPECT_TRUE(seen.insert(in[static_cast<size_t>(i)]).second) << "token read twice";
      }
    }
  }
  EXPECT_EQ(seen.size(), 4u * BT);  // the two ranks together read 4 batches, disjoint
  // Rank 1's third batch would need tokens 40..48: it wraps to its first one.
  r1.next(in, tg);
  EXPECT_EQ(in[0], BT);
  EXPECT_EQ(r1.epoch(), 1);
  r1.reset();
  EXPECT_EQ(r1.position(), BT);
  EXPECT_EQ(r1.epoch(), 0);
}

TEST(DataLoader, RefusesAFileTooSmallForTheBatch) {
  ScratchDir dir("zrt_loader_small");
  write_token_file(dir / "t.bin", iota_tokens(16), TokenFormat::raw);
  TokenFile f = TokenFile::open(dir / "t.bin", TokenFormat::raw, 50257);
  try {
    DataLoader l(f, 2, 4, 0, 2);
    FAIL();
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("16 tokens are too few for batches of 2 x 4 on 2 rank(s) "
                                         "(need 17)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(DataLoader(f, 3, 5, 0, 1));
}

}  // namespace
}  // namespace gpt2::test
