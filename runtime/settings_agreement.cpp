#include "runtime/settings_agreement.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstdint>

#include "runtime/agree.hpp"
#include "runtime/error.hpp"

namespace zrt {

namespace {

// name=value lines: what is compared (the source is not).
std::string canonical(const std::vector<Setting> &settings) {
  std::string out;
  for (const Setting &s : settings) {
    out += s.name;
    out += '=';
    out += s.value;
    out += '\n';
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> parse(const std::string &text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    size_t eq = line.find('=');
    out.emplace_back(line.substr(0, eq), eq == std::string::npos ? "" : line.substr(eq + 1));
    at = end + 1;
  }
  return out;
}

}  // namespace

void check_same_settings(MPI_Comm comm, const std::vector<Setting> &settings, const char *what) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::string mine = canonical(settings);
  uint64_t hash = XXH3_64bits(mine.data(), mine.size());
  uint64_t rank0_hash = hash;
  watched_bcast(comm, &rank0_hash, sizeof rank0_hash, 0, "broadcast of rank 0's settings hash");
  int differs = hash != rank0_hash ? 1 : 0;
  watched_allreduce(comm, &differs, 1, MPI_INT, MPI_MAX, "agreement on the settings");
  if (differs == 0) return;

  // Some rank differs: every rank learns rank 0's settings and names its first difference.
  uint64_t length = mine.size();
  watched_bcast(comm, &length, sizeof length, 0, "broadcast of rank 0's settings");
  std::string theirs(static_cast<size_t>(length), '\0');
  if (rank == 0) theirs = mine;
  watched_bcast(comm, theirs.data(), theirs.size(), 0, "broadcast of rank 0's settings");
  run_agreed(comm, [&] {
    if (hash == rank0_hash) return;
    std::vector<std::pair<std::string, std::string>> rank0 = parse(theirs);
    for (size_t i = 0; i < settings.size(); ++i) {
      const Setting &s = settings[i];
      if (i >= rank0.size() || rank0[i].first != s.name)
        fail(ZRT_ERR_MISMATCH, "{} differ from rank 0's: {} is not a setting there", what, s.name);
      if (rank0[i].second != s.value)
        fail(ZRT_ERR_MISMATCH,
             "{} differ from rank 0's: {} is '{}' here ({}) but '{}' on rank 0; every rank must "
             "resolve the same value (look for a ZRT_* variable set on some ranks only)",
             what, s.name, s.value, s.source, rank0[i].second);
    }
    fail(ZRT_ERR_MISMATCH, "{} differ from rank 0's: rank 0 has more of them", what);
  });
}

}  // namespace zrt
