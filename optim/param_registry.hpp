// The parameters registered with an engine: their names, shapes and per-parameter weight
// decay, checked as they arrive, and compared across ranks at commit (a hash per parameter,
// then the first that differs from rank 0's is named).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "optim/checkpoint/tensor_names.hpp"
#include "optim/layout.hpp"
#include "zerort/defs.h"

namespace zrt {

class ParamRegistry {
 public:
  // Checks and appends a parameter; returns its index. Throws Error naming the parameter
  // and the bad argument, or both names when a checkpoint could not hold the two
  // (checkpoint/tensor_names.hpp). Local.
  int add(const char *name, zrt_dtype_t dtype, zrt_dtype_t engine_dtype, int ndim,
          const int64_t *shape);
  // Throws Error(ZRT_ERR_MISMATCH) on every rank unless every rank registered the same
  // names and shapes in the same order (ZRT_ERR_INVALID_STATE when none is registered).
  // Collective over control.
  void check_same_on_every_rank(MPI_Comm control, int rank) const;
  // Takes the layout's placement (offsets, buckets) of every parameter.
  void place(const Layout &layout);

  int count() const { return static_cast<int>(params_.size()); }
  const ParamInfo &at(int index) const;
  // The name as a C string that stays valid while the registry lives (zrt_param_info): the
  // ParamInfo entries move as the vector grows and are replaced at commit.
  const char *c_name(int index) const { return c_names_[static_cast<size_t>(index)].c_str(); }
  const std::vector<ParamInfo> &all() const { return params_; }

  // A parameter's own weight decay (biases, norms: often 0), from the next step on.
  void set_weight_decay(int index, double weight_decay);
  // The decay of `index`: its own, or the engine's.
  double weight_decay_of(int index, double engine_default) const {
    double wd = params_[static_cast<size_t>(index)].weight_decay;
    return wd >= 0 ? wd : engine_default;
  }
  bool custom_decay() const { return custom_decay_; }
  // Changes with every set_weight_decay (an update computed before one is stale).
  uint64_t decay_version() const { return decay_version_; }

 private:
  std::vector<ParamInfo> params_;
  std::map<std::string, int> names_;
  // The names as a checkpoint holds them: no two may collide there.
  checkpoint::TensorNames tensor_names_{"parameter", "registered"};
  std::deque<std::string> c_names_;  // a deque never moves its elements
  bool custom_decay_ = false;        // some parameter has its own weight decay
  uint64_t decay_version_ = 0;
};

}  // namespace zrt
