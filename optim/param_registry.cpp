#include "optim/param_registry.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cmath>

#include "comm/dtype.hpp"
#include "runtime/agree.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

int ParamRegistry::add(const char *name, zrt_dtype_t dtype, zrt_dtype_t engine_dtype, int ndim,
                       const int64_t *shape) {
  require_nonnull(name, "name");
  if (*name == '\0') fail(ZRT_ERR_INVALID_ARGUMENT, "name is empty");
  if (names_.count(name))
    fail(ZRT_ERR_INVALID_ARGUMENT, "a parameter named '{}' is already registered", name);
  // Refused here, where the program learns it, rather than at every save.
  tensor_names_.check(name);
  dtype_size(dtype);  // a valid dtype at all
  if (dtype != engine_dtype)
    fail(ZRT_ERR_NOT_SUPPORTED, "parameter '{}' has dtype {} but the engine computes in {}", name,
         dtype_name(dtype), dtype_name(engine_dtype));
  if (ndim < 1 || ndim > 8)
    fail(ZRT_ERR_INVALID_ARGUMENT, "parameter '{}': ndim is {}: accepted values are 1 .. 8", name,
         ndim);
  require_nonnull(shape, "shape");
  ParamInfo info;
  info.name = name;
  info.numel = 1;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] <= 0)
      fail(ZRT_ERR_INVALID_ARGUMENT, "parameter '{}': shape[{}] is {}: extents must be positive",
           name, d, shape[d]);
    if (info.numel > (size_t{1} << 48) / static_cast<size_t>(shape[d]))
      fail(ZRT_ERR_INVALID_ARGUMENT, "parameter '{}' is too large", name);
    info.numel *= static_cast<size_t>(shape[d]);
    info.shape.push_back(shape[d]);
  }
  names_[info.name] = count();
  tensor_names_.insert(info.name);
  c_names_.push_back(info.name);
  params_.push_back(std::move(info));
  return count() - 1;
}

void ParamRegistry::check_same_on_every_rank(MPI_Comm control, int rank) const {
  std::vector<uint64_t> hashes;
  for (const ParamInfo &p : params_) {
    XXH3_state_t *st = XXH3_createState();
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, p.name.data(), p.name.size());
    XXH3_64bits_update(st, p.shape.data(), p.shape.size() * sizeof(int64_t));
    hashes.push_back(XXH3_64bits_digest(st));
    XXH3_freeState(st);
  }
  uint64_t count = hashes.size(), rank0_count = count;
  watched_bcast(control, &rank0_count, sizeof rank0_count, 0,
                "broadcast of rank 0's parameter count");
  std::vector<uint64_t> rank0(rank0_count);
  if (rank == 0) rank0 = hashes;
  watched_bcast(control, rank0.data(), rank0.size() * sizeof(uint64_t), 0,
                "broadcast of rank 0's parameter names and shapes");
  run_agreed(control, [&] {
    if (count == 0) fail(ZRT_ERR_INVALID_STATE, "no parameter is registered");
    for (size_t i = 0; i < std::min(count, rank0_count); ++i)
      if (hashes[i] != rank0[i])
        fail(ZRT_ERR_MISMATCH,
             "parameter #{} ('{}') differs from rank 0's parameter #{}: every rank must register "
             "the same names and shapes in the same order",
             i, params_[i].name, i);
    if (count != rank0_count)
      fail(ZRT_ERR_MISMATCH, "{} parameters are registered here but {} on rank 0", count,
           rank0_count);
  });
}

void ParamRegistry::place(const Layout &layout) {
  params_ = layout.params();
}

const ParamInfo &ParamRegistry::at(int index) const {
  if (index < 0 || index >= count())
    fail(ZRT_ERR_INTERNAL, "parameter index {} out of range", index);
  return params_[static_cast<size_t>(index)];
}

void ParamRegistry::set_weight_decay(int index, double weight_decay) {
  const ParamInfo &p = at(index);
  if (!(weight_decay >= 0) || !std::isfinite(weight_decay))
    fail(ZRT_ERR_INVALID_ARGUMENT, "weight decay of '{}' is {}: it must be a finite value >= 0",
         p.name, weight_decay);
  params_[static_cast<size_t>(index)].weight_decay = weight_decay;
  custom_decay_ = true;
  ++decay_version_;
}

}  // namespace zrt
