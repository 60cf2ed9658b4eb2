#include "comm/arg_check.hpp"

#include <climits>
#include <string>

#include "runtime/error.hpp"
#include "runtime/graveyard.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {

// The signature of a rank that rejected its arguments: above any real one, so MPI_MAX
// brings it to every rank.
constexpr int64_t kPoison = INT64_MAX;

// A signature of everything the ranks must agree on, folded into 62 bits so that it and
// its negation fit an int64 (one MPI_MAX all-reduce then yields both min and max).
int64_t signature(const CollArgs &a, int backend) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  auto mix = [&](uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  };
  mix(static_cast<uint64_t>(a.kind));
  mix(static_cast<uint64_t>(a.count));
  mix(static_cast<uint64_t>(a.dtype));
  mix(static_cast<uint64_t>(a.op));
  mix(static_cast<uint64_t>(a.root));
  mix(static_cast<uint64_t>(backend));
  return static_cast<int64_t>(h >> 2);
}

// What and which bucket, in one value: what in the bits above 40, the bucket below.
int64_t purpose_code(const CollPurpose &p) {
  return static_cast<int64_t>(p.what) << 40 | ((p.index + 1) & ((int64_t{1} << 40) - 1));
}

CollPurpose purpose_of(int64_t code, int64_t step) {
  CollPurpose p;
  p.what = static_cast<CollPurpose::What>(code >> 40);
  p.index = (code & ((int64_t{1} << 40) - 1)) - 1;
  p.step = step;
  return p;
}

}  // namespace

void ArgCheck::post(MPI_Comm comm, const CollArgs &args, int backend, bool poison) {
  int64_t mine[kCompared] = {};
  mine[kSignature] = poison ? kPoison : signature(args, backend);
  mine[kCount] = static_cast<int64_t>(args.count);
  mine[kBackend] = backend;
  mine[kPurpose] = purpose_code(args.purpose);
  mine[kStep] = args.purpose.step;
  int64_t *v = slots();
  for (int i = 0; i < kCompared; ++i) {
    v[2 * i] = mine[i];
    v[2 * i + 1] = -mine[i];
  }
  const int rc = MPI_Iallreduce(MPI_IN_PLACE, v, kSlots, MPI_INT64_T, MPI_MAX, comm, &request_);
  if (rc != MPI_SUCCESS)
    fail(ZRT_ERR_MPI, "MPI_Iallreduce (argument check) failed: {}", mpi_error_string(rc));
}

bool ArgCheck::test() {
  int done = 0;
  const int rc = MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) fail(ZRT_ERR_MPI, "argument check failed: {}", mpi_error_string(rc));
  return done != 0;
}

void ArgCheck::verdict(const CollArgs &args, int rank) const {
  const int64_t max_sig = highest(kSignature), min_sig = lowest(kSignature);
  const int64_t max_count = highest(kCount), min_count = lowest(kCount);
  const int64_t max_backend = highest(kBackend), min_backend = lowest(kBackend);
  if (max_sig == kPoison)
    fail(ZRT_ERR_REMOTE,
         "{} on rank {}: another rank rejected its arguments for this collective (its error "
         "message names them)",
         args.describe(), rank);
  const int64_t max_purpose = highest(kPurpose), min_purpose = lowest(kPurpose);
  const int64_t max_step = highest(kStep), min_step = lowest(kStep);
  const bool same_purpose = max_purpose == min_purpose && max_step == min_step;
  if (max_sig == min_sig && max_count == min_count && same_purpose) return;
  std::string what;
  if (!same_purpose && max_count == min_count && max_sig == min_sig) {
    // The same shape of collective, carrying different things: say what this rank meant
    // and the range the ranks posted it for.
    const std::string mine = purpose_text(args.purpose);
    const CollPurpose low = purpose_of(min_purpose, min_step),
                      high = purpose_of(max_purpose, max_step);
    std::string range;
    if (low.what != high.what)
      range = "ranks posted it for different purposes: " + purpose_text(low) + " to " +
              purpose_text(high);
    else if (low.index != high.index)
      range = fmt::format("the ranks posted it for buckets {} to {}", low.index, high.index);
    else
      range = fmt::format("the ranks posted it at steps {} to {}", min_step, max_step);
    what = fmt::format("the ranks exchange different data: this rank posted it for {}, but {}",
                       mine.empty() ? "a collective of its own" : mine, range);
    fail(ZRT_ERR_MISMATCH, "{} on rank {}: {}", args.describe(), rank, what);
  }
  if (max_count != min_count)
    what = fmt::format("counts differ across ranks: from {} to {}", min_count, max_count);
  else if (max_backend != min_backend)
    what =
        "the ranks chose different backends for it: are the buffers in host memory on some "
        "ranks and in device memory on others?";
  else
    what = "the collective, dtype, op or root differs across ranks";
  fail(ZRT_ERR_MISMATCH,
       "{} on rank {}: {}; every rank must post the same collectives in the same order with "
       "the same arguments",
       args.describe(), rank, what);
}

void ArgCheck::abandon() {
  request_ = MPI_REQUEST_NULL;
  bury(std::move(storage_));
}

}  // namespace zrt
