// A small stand-in for libFuzzer, so `make test` runs the fuzz targets with any compiler:
// every seed file, then seeded random mutations of them (bit flips, byte overwrites,
// truncations, duplicated slices) for a fixed number of runs. `make fuzz` builds the same
// targets with clang's libFuzzer for open-ended, coverage-guided runs.
//   fuzz_driver RUNS SEED_FILE...
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s RUNS SEED_FILE...\n", argv[0]);
    return 2;
  }
  long runs = std::strtol(argv[1], nullptr, 10);
  std::vector<std::vector<uint8_t>> seeds;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(seeds.back().data(), seeds.back().size());
  }
  std::mt19937_64 rng(20261129);
  for (long r = 0; r < runs; ++r) {
    std::vector<uint8_t> x = seeds[rng() % seeds.size()];
    int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !x.empty(); ++e) {
      size_t at = rng() % x.size();
      switch (rng() % 4) {
        case 0:
          x[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1:
          x[at] = static_cast<uint8_t>(rng());
          break;
        case 2:
          x.resize(at);
          break;
        case 3: {
          size_t len = std::min<size_t>(rng() % 64, x.size() - at);
          x.insert(x.begin() + static_cast<long>(rng() % (x.size() + 1)),
                   x.begin() + static_cast<long>(at), x.begin() + static_cast<long>(at + len));
          break;
        }
      }
    }
    LLVMFuzzerTestOneInput(x.data(), x.size());
  }
  std::printf("fuzz_driver: %zu seeds and %ld mutations, no crash\n", seeds.size(), runs);
  return 0;
}
