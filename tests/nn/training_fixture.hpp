// What the trainers' MPI tests (GPT-2's, BERT's) share: model states that raise SIGUSR1
// mid-run, a scratch folder every rank sees, and the parameters gathered for comparison.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "training/model_state.hpp"

namespace apps_test {

/// Model states that raise SIGUSR1 during micro-step @p at (1-based), as Slurm would before
/// a time limit.
class SignalAtStep final : public training::ModelState {
 public:
  SignalAtStep(std::unique_ptr<training::ModelState> inner, int at)
      : inner_(std::move(inner)), at_(at) {}
  zrt::nn::ParameterStore<float> &store() override { return inner_->store(); }
  double loss_scale() const override { return inner_->loss_scale(); }
  training::StepReport step(std::optional<double> lr) override {
    if (++steps_ == at_) std::raise(SIGUSR1);
    return inner_->step(lr);
  }
  training::StateMemory memory() const override { return inner_->memory(); }
  int64_t stage0_bytes() const override { return inner_->stage0_bytes(); }
  void save(const std::string &path, const std::string &metadata, bool background) override {
    inner_->save(path, metadata, background);
  }
  void load(const std::string &path) override { inner_->load(path); }
  std::string describe() const override { return inner_->describe(); }
  training::ModelState &inner() { return *inner_; }

 private:
  std::unique_ptr<training::ModelState> inner_;
  int at_, steps_ = 0;
};

/// A scratch folder of rank 0's making that every rank names alike, removed at the end.
/// Collective (construction and destruction).
class SharedDir {
 public:
  explicit SharedDir(const std::string &tag) {
    int pid = ::getpid(), rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    rank0_ = rank == 0;
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    path_ = std::filesystem::temp_directory_path() / (tag + "_" + std::to_string(pid));
    if (rank0_) std::filesystem::create_directories(path_);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  ~SharedDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank0_) std::filesystem::remove_all(path_);
  }
  std::filesystem::path operator/(const std::string &name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
  bool rank0_ = false;
};

/// Every parameter, in layout order (collective at stages 1-3).
inline std::vector<float> all_parameters(training::ModelState &state) {
  std::vector<float> out, values;
  for (size_t id = 0; id < state.store().tensors().size(); ++id) {
    values.resize(static_cast<size_t>(state.store().tensors()[id].numel()));
    state.store().get(static_cast<int>(id), values.data());
    out.insert(out.end(), values.begin(), values.end());
  }
  return out;
}

/// Whether @p mine is bitwise the same on every rank. Collective over MPI_COMM_WORLD.
inline bool same_on_all_ranks(const std::vector<float> &mine) {
  std::vector<float> first = mine;
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  int same = std::memcmp(first.data(), mine.data(), mine.size() * sizeof(float)) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return same != 0;
}

}  // namespace apps_test
