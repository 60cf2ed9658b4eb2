// The predicted time of one training step on a rank: compute (forward and backward), the
// optimizer over the rank's share of the state, and the communication the engine leaves
// exposed. The collectives are the plan's own (zrt_plan_comm: calls and bytes as the engine
// posts them); their times come from alpha-beta fits, t = alpha + beta * bytes per call:
// the comm_fit lines `zrt-bench comm --json` prints for the job's backend and rank count,
// or a fabric preset. Compute and optimizer rates are the user's (or what `make bench`
// measured on the same machine in the same run).
//
// What the engine hides: the gradient reductions run during backward (bucket by bucket)
// and stage 3's gathers during forward (prefetched), so a share `overlap` of them is hidden
// behind compute, up to backward's time (two thirds of the compute) and forward's (a
// third); the all-gather of updated parameters at stages 1 and 2 follows the optimizer and
// is always exposed. On GPUs NCCL runs beside the kernels (overlap near 1);
// on CPU ranks the shm backend's copies and sums take the cores the model computes on
// (overlap 0).
#pragma once

#include <zerort/zerort.h>

#include <string>
#include <vector>

namespace plan {

struct Fit {
  double alpha = 0;  // seconds per call
  double beta = 0;   // seconds per byte
  double seconds(int64_t calls, int64_t bytes) const {
    return static_cast<double>(calls) * alpha + beta * static_cast<double>(bytes);
  }
};

struct CommModel {
  std::string source;  // the profile file and backend, or the preset
  Fit reduce_scatter, all_gather, all_reduce;
  double overlap = 0;  // the share of reductions and stage-3 gathers hidden (the default)
};

// The comm_fit lines of `zrt-bench comm --json` for `backend` (zerort's backend name, as
// the bench prints it) at `np` ranks in `dtype` (the job's compute dtype, which its
// collectives move): reduce_scatter, all_gather_in_place (the engine's form) and
// all_reduce. Throws std::invalid_argument naming the file and what is missing:
// not zrt-bench output, no fit for that backend and rank count, or a fit the bench marked
// unsound (with its reason).
CommModel profile_from_file(const std::string &path, const std::string &backend, int np,
                            const std::string &dtype);

// A named fabric for GPU nodes (docs/trainers.md, "Planning a job", gives the sources): its
// bus bandwidth inside a node and between nodes, and a latency per call. Throws
// std::invalid_argument listing the names.
CommModel fabric_preset(const std::string &name, int nranks, int ranks_per_node);
std::vector<std::string> fabric_names();

struct StepInputs {
  double flops = 0;             // forward + backward of one optimizer step, on this rank
  double flops_per_second = 0;  // the rank's sustained compute rate
  double optimizer_bytes = 0;   // memory the optimizer reads and writes in a step
  double optimizer_bytes_per_second = 0;
  zrt_plan_comm_t comm{};
  double overlap = 0;
  // The compute the collectives can hide behind, as shares of `flops`' time: the backward
  // passes during which reductions run (all of them at stages 2-3, the last micro-step's at
  // 0-1), and the forward during which stage 3 gathers (the first micro-step's: the groups
  // then stay); 0 where nothing overlaps.
  double reduce_window = 0, gather_window = 0;
};

struct StepTime {
  double compute = 0, optimizer = 0;
  double reduce = 0, gather = 0;  // the collectives' whole times
  double exposed = 0;             // of reduce + gather, what compute does not hide
  double total() const { return compute + optimizer + exposed; }
};

StepTime predict_step(const StepInputs &in, const CommModel &comm);

}  // namespace plan
