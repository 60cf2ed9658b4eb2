#include "optim/checkpoint/background_save.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "comm/dtype.hpp"
#include "memory/pool_block.hpp"
#include "optim/checkpoint/block_checksums.hpp"
#include "optim/checkpoint/checkpoint_io.hpp"
#include "optim/checkpoint/checkpoint_paths.hpp"
#include "optim/checkpoint/h5.hpp"
#include "runtime/agree.hpp"
#include "runtime/log.hpp"
#include "runtime/mpi_error.hpp"
#include "zerort/version.h"

namespace zrt::checkpoint {

namespace {

constexpr int kTag = 0x5a7;  // the staging exchange's messages on the control communicator

// Every rank's save runs, from each rank's own list: (param, begin, count) triples.
std::vector<OwnedRun> all_runs(MPI_Comm comm, int nranks,
                               const std::vector<Engine::StatePiece> &mine) {
  std::vector<int64_t> local;
  for (const Engine::StatePiece &p : mine)
    local.insert(local.end(),
                 {p.param, static_cast<int64_t>(p.param_offset), static_cast<int64_t>(p.count)});
  int64_t n = static_cast<int64_t>(local.size()), most = 0;
  std::vector<int64_t> sizes(static_cast<size_t>(nranks));
  watched_allgather(comm, &n, 1, MPI_INT64_T, sizes.data(), "all-gather of the save's run counts");
  for (int64_t s : sizes)
    most = std::max(most, s);
  local.resize(static_cast<size_t>(most), -1);
  std::vector<int64_t> all(static_cast<size_t>(most) * static_cast<size_t>(nranks));
  watched_allgather(comm, local.data(), static_cast<int>(most), MPI_INT64_T, all.data(),
                    "all-gather of the save's runs");
  std::vector<OwnedRun> out;
  for (int r = 0; r < nranks; ++r)
    for (int64_t i = 0; i + 2 < sizes[static_cast<size_t>(r)]; i += 3) {
      const int64_t *t =
          all.data() + static_cast<size_t>(r) * static_cast<size_t>(most) + static_cast<size_t>(i);
      out.push_back(
          {static_cast<int>(t[0]), r, static_cast<size_t>(t[1]), static_cast<size_t>(t[2])});
    }
  return out;
}

}  // namespace

const char *optimizer_state_kind(const Engine &e) {
  if (e.has_m() && e.has_v()) return "adam";
  if (e.has_m()) return "momentum";
  return "none";
}

std::vector<std::pair<std::string, float * Engine::StatePiece::*>> state_arrays(
    const std::string &kind) {
  std::vector<std::pair<std::string, float *Engine::StatePiece::*>> out = {
      {"params/", &Engine::StatePiece::master}};
  std::vector<std::string> moments = state_names(kind);
  if (!moments.empty()) out.emplace_back(moments[0], &Engine::StatePiece::m);
  if (moments.size() > 1) out.emplace_back(moments[1], &Engine::StatePiece::v);
  return out;
}

std::shared_ptr<BackgroundSave> BackgroundSave::start(Engine &e, const std::string &pattern,
                                                      const std::string &metadata, int keep_last,
                                                      bool async) {
  const double t0 = MPI_Wtime();
  h5::Quiet quiet;
  MPI_Comm comm = e.control_comm();
  const char *what = async ? "zrt_checkpoint_save_async" : "zrt_checkpoint_save";
  same_path_on_every_rank(comm, pattern, what);
  run_agreed(comm, [&] {
    e.require_between_steps(what);
    e.require_complete_state(what);
    if (!metadata.empty() && !nlohmann::json::accept(metadata))
      fail(ZRT_ERR_INVALID_ARGUMENT, "metadata is not valid JSON");
  });
  std::shared_ptr<BackgroundSave> s(new BackgroundSave(e));
  s->pattern_ = pattern;
  s->path_ = expand_path(pattern, e.step_count());
  s->tmp_ = s->path_ + ".tmp";
  s->keep_last_ = keep_last;
  s->step_ = e.step_count();
  s->block_ =
      static_cast<size_t>(e.context().config().get_int("checkpoint.block_bytes")) / sizeof(float);

  // The datasets: each parameter's master weights, then its moments.
  const std::string kind = optimizer_state_kind(e);
  const auto arrays = state_arrays(kind);
  const size_t K = arrays.size();
  std::vector<size_t> param_numel;
  std::vector<std::vector<int64_t>> shapes;
  for (int p = 0; p < e.param_count(); ++p) {
    const ParamInfo &info = e.param(p);
    param_numel.push_back(info.numel);
    for (const auto &a : arrays) {
      s->names_.push_back(a.first + info.name);
      s->numel_.push_back(info.numel);
      shapes.push_back(info.shape);
    }
  }

  // Which blocks this rank writes, and the parts of them that come from other ranks.
  std::vector<Engine::StatePiece> mine;
  for (const Engine::StatePiece &p : e.state_pieces())
    if (p.owner == e.rank()) mine.push_back(p);
  std::vector<OwnedRun> runs = all_runs(comm, e.nranks(), mine);
  SavePlan plan;
  run_agreed(comm, [&] { plan = plan_save(runs, param_numel, s->block_); });
  std::sort(runs.begin(), runs.end(), [](const OwnedRun &a, const OwnedRun &b) {
    return a.param != b.param ? a.param < b.param : a.begin < b.begin;
  });
  std::map<std::pair<int, size_t>, const Engine::StatePiece *> piece_at;  // (param, begin)
  for (const Engine::StatePiece &p : mine)
    piece_at[{p.param, p.param_offset}] = &p;
  // The piece of mine holding elements [begin, begin + count) of param, or null.
  auto covering = [&](int param, size_t begin, size_t count) -> const Engine::StatePiece * {
    auto it = piece_at.upper_bound({param, begin});
    if (it == piece_at.begin()) return nullptr;
    --it;
    const Engine::StatePiece *p = it->second;
    return p->param == param && p->param_offset <= begin &&
                   begin + count <= p->param_offset + p->count
               ? p
               : nullptr;
  };
  std::vector<BlockRange> my_writes;
  for (const BlockRange &w : plan.writes)
    if (w.writer == e.rank()) my_writes.push_back(w);
  // A synchronous save of host state writes a block range that one piece holds in place.
  const bool in_place_ok = !async;
  // Staged elements. A range of a page or more starts where its file offset falls in a
  // page, so that its whole pages go out direct (direct_writer.hpp) without a bounce copy:
  // up to a page of padding each; smaller ones go through the page cache and pack.
  constexpr size_t kPage = DirectWriter::kAlignment / sizeof(float);
  auto direct_sized = [](size_t count) { return count >= kPage; };
  size_t staged = 0;
  std::vector<bool> in_place;
  for (const BlockRange &w : my_writes) {
    const Engine::StatePiece *held = covering(w.param, w.begin, w.count);
    in_place.push_back(in_place_ok && held != nullptr && !held->on_device);
    if (!in_place.back()) staged += K * (w.count + (direct_sized(w.count) ? kPage : 0));
  }

  run_agreed(comm, [&] {
    if (e.rank() == 0) remove_unfinished_saves(pattern);
    uint64_t elements = 0;
    for (size_t n : s->numel_)
      elements += n;
    check_room(s->tmp_, elements * sizeof(float));
    if (staged > 0) s->staging_ = e.checkpoint_staging((staged + kPage) * sizeof(float));
  });

  // Rank 0 lays the file out; the others learn where each dataset's bytes go.
  s->offsets_.assign(s->names_.size(), 0);
  run_agreed(comm, [&] {
    if (e.rank() != 0) return;
    const EngineSettings &st = e.settings();
    const hsize_t alignment =
        static_cast<hsize_t>(e.context().config().get_int("checkpoint.alignment"));
    h5::Id file = h5::create_file(s->tmp_, MPI_COMM_NULL, alignment);
    nlohmann::json optimizer{{"type", optimizer_name(st.optimizer)},
                             {"lr", e.lr()},
                             {"betas", {st.beta1, st.beta2}},
                             {"eps", st.eps},
                             {"weight_decay", st.weight_decay},
                             {"momentum", st.momentum},
                             {"nesterov", st.nesterov}};
    LossScaler::State ls = e.scaler().state();
    nlohmann::json scaler{{"dynamic", e.scaler().dynamic()},
                          {"scale", ls.scale},
                          {"hysteresis_left", ls.hysteresis_left},
                          {"iteration", ls.iteration},
                          {"last_overflow", ls.last_overflow}};
    h5::write_attr(file, "format_version", kFormatVersion);
    h5::write_attr(file, "zerort_version", std::string(ZRT_VERSION_STRING));
    h5::write_attr(file, "step", static_cast<int64_t>(e.step_count()));
    h5::write_attr(file, "stage", static_cast<int64_t>(st.stage));
    h5::write_attr(file, "world_size", static_cast<int64_t>(e.nranks()));
    h5::write_attr(file, "compute_dtype", std::string(dtype_name(st.dtype)));
    h5::write_attr(file, "optimizer", optimizer.dump());
    h5::write_attr(file, "optimizer_state", kind);
    h5::write_attr(file, "loss_scaler", scaler.dump());
    h5::write_attr(file, "config", e.context().config().to_json().dump());
    h5::write_attr(file, "metadata", metadata.empty() ? std::string("{}") : metadata);
    h5::write_attr(file, "checksum_block", static_cast<int64_t>(s->block_));
    s->offsets_ = create_datasets(file, s->names_, shapes);
  });
  watched_bcast(comm, s->offsets_.data(), s->offsets_.size() * sizeof(uint64_t), 0,
                "broadcast of the checkpoint's dataset offsets");

  // The staging copy: this rank's parts of its blocks, and the other parts by message. The
  // buffers a message reads or writes stay as they are until MPI_Waitall.
  std::vector<MPI_Request> requests;
  std::vector<std::vector<float>> device_sends;  // device state, staged for MPI
  // An asynchronous save of host state leaves its own copies to the writer's thread;
  // device state (all of it, or a partial offload's part) is copied now.
  auto local_copy = [&](const Engine::StatePiece &p, void *dst, const void *src, size_t bytes) {
    if (p.on_device)
      e.copy_state(dst, src, bytes);
    else if (async)
      s->snapshot_.push_back({dst, src, bytes});
    else
      std::memcpy(dst, src, bytes);
  };
  float *stage = nullptr;
  if (!s->staging_.empty()) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(s->staging_.data());
    stage = s->staging_.data<float>() + (round_up(base, kPage * sizeof(float)) - base) / 4;
  }
  size_t at = 0;  // into stage: each array's ranges after the previous array's
  for (size_t k = 0; k < K; ++k) {
    float *Engine::StatePiece::*array = arrays[k].second;
    std::vector<float *> write_at(my_writes.size(), nullptr);
    for (size_t i = 0; i < my_writes.size(); ++i) {
      const BlockRange &w = my_writes[i];
      const size_t dataset = static_cast<size_t>(w.param) * K + k;
      if (in_place[i]) {
        const Engine::StatePiece *p = covering(w.param, w.begin, w.count);
        s->writes_.push_back({dataset, w.begin, w.count, p->*array + (w.begin - p->param_offset)});
        continue;
      }
      if (direct_sized(w.count)) {  // at (in the page-aligned stage) in the file's phase
        const size_t phase = (s->offsets_[dataset] / sizeof(float) + w.begin) % kPage;
        at += (phase + kPage - at % kPage) % kPage;
      }
      float *dst = stage + at;
      at += w.count;
      write_at[i] = dst;
      s->writes_.push_back({dataset, w.begin, w.count, dst});
      // This rank's own runs inside the range.
      auto it =
          std::lower_bound(runs.begin(), runs.end(), w, [](const OwnedRun &r, const BlockRange &b) {
            return r.param != b.param ? r.param < b.param : r.begin + r.count <= b.begin;
          });
      for (; it != runs.end() && it->param == w.param && it->begin < w.begin + w.count; ++it) {
        if (it->owner != e.rank()) continue;
        const size_t from = std::max(it->begin, w.begin),
                     to = std::min(it->begin + it->count, w.begin + w.count);
        const Engine::StatePiece *p = covering(w.param, from, to - from);
        local_copy(*p, dst + (from - w.begin), p->*array + (from - p->param_offset),
                   (to - from) * sizeof(float));
      }
    }
    for (const Transfer &t : plan.transfers) {
      if (t.to == e.rank()) {
        size_t i = 0;
        while (!(my_writes[i].param == t.param && my_writes[i].begin <= t.begin &&
                 t.begin < my_writes[i].begin + my_writes[i].count))
          ++i;
        requests.emplace_back();
        check_mpi(MPI_Irecv(write_at[i] + (t.begin - my_writes[i].begin), static_cast<int>(t.count),
                            MPI_FLOAT, t.from, kTag, comm, &requests.back()),
                  "MPI_Irecv of a checkpoint block's part");
      } else if (t.from == e.rank()) {
        const Engine::StatePiece *p = covering(t.param, t.begin, t.count);
        const float *src = p->*array + (t.begin - p->param_offset);
        if (p->on_device) {
          device_sends.emplace_back(t.count);
          e.copy_state(device_sends.back().data(), src, t.count * sizeof(float));
          src = device_sends.back().data();
        }
        requests.emplace_back();
        check_mpi(MPI_Isend(src, static_cast<int>(t.count), MPI_FLOAT, t.to, kTag, comm,
                            &requests.back()),
                  "MPI_Isend of a checkpoint block's part");
      }
    }
  }
  check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall of the checkpoint's block exchange");

  const bool direct = e.context().config().get_string("checkpoint.direct_io") != "off";
  run_agreed(comm, [&] {
    try {
      s->writer_ = std::make_unique<DirectWriter>(s->tmp_, direct);
    } catch (int err) {
      fail(ZRT_ERR_IO, "cannot open {} to write this rank's blocks: {}", s->tmp_,
           std::strerror(err));
    }
  });
  s->start_seconds_ = MPI_Wtime() - t0;
  s->snapshot_taken_ = s->snapshot_.empty();
  s->async_ = async;
  if (async)
    s->thread_ = std::thread([raw = s.get()] { raw->write_all(true); });
  else
    s->write_all(false);
  return s;
}

std::vector<uint64_t> create_datasets(hid_t file, const std::vector<std::string> &names,
                                      const std::vector<std::vector<int64_t>> &shapes) {
  h5::Id lcpl(h5::check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate"), H5Pclose);
  H5Pset_create_intermediate_group(lcpl, 1);
  // Contiguous, so that a dataset is one range of the file that ranks write with pwrite;
  // allocated now, so that the range exists; never filled, since every byte is written.
  h5::Id dcpl(h5::check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate"), H5Pclose);
  h5::check(H5Pset_layout(dcpl, H5D_CONTIGUOUS), "H5Pset_layout");
  h5::check(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY), "H5Pset_alloc_time");
  h5::check(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
  std::vector<uint64_t> offsets;
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<hsize_t> dims(shapes[i].begin(), shapes[i].end());
    h5::Id space(h5::check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                           "H5Screate_simple"),
                 H5Sclose);
    h5::Id d(h5::check(
                 H5Dcreate2(file, names[i].c_str(), H5T_IEEE_F32LE, space, lcpl, dcpl, H5P_DEFAULT),
                 "cannot create /" + names[i]),
             H5Dclose);
    haddr_t at = H5Dget_offset(d);
    if (at == HADDR_UNDEF) fail(ZRT_ERR_IO, "HDF5 gave /{} no place in the file", names[i]);
    offsets.push_back(static_cast<uint64_t>(at));
  }
  return offsets;
}

void BackgroundSave::take_snapshot() {
  if (snapshot_.empty()) return;
  for (const Copy &c : snapshot_)
    std::memcpy(c.dst, c.src, c.bytes);
  {
    std::lock_guard<std::mutex> lock(snapshot_mutex_);
    snapshot_taken_ = true;
  }
  snapshot_done_.notify_all();
}

void BackgroundSave::wait_for_snapshot() {
  std::unique_lock<std::mutex> lock(snapshot_mutex_);
  snapshot_done_.wait(lock, [&] { return snapshot_taken_; });
}

void BackgroundSave::write_all(bool background) {
  // The snapshot at the caller's priority: the engine's next step waits for it.
  take_snapshot();
  // Then behind the training's own threads where cores are short: the save may take
  // longer, the steps it overlaps less.
  if (background) ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
  const auto t0 = std::chrono::steady_clock::now();
  size_t dataset = 0;
  try {
    for (const Write &w : writes_) {
      dataset = w.dataset;
      for (size_t at = 0; at < w.count && !cancel_; at += block_) {
        const size_t n = std::min(block_, w.count - at);
        const float *src = w.values + at;
        // Hashed just before it goes out, while the block is in cache.
        hashes_.insert(hashes_.end(),
                       {w.dataset, (w.begin + at) / block_, XXH3_64bits(src, n * sizeof(float))});
        writer_->write(src, n * sizeof(float), offsets_[w.dataset] + (w.begin + at) * 4);
      }
    }
    writer_->finish();
    log::debug(
        "checkpoint write on this rank: {:.3f} s, {:.1f} MB direct, {:.1f} MB through the "
        "page cache",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
        static_cast<double>(writer_->direct_bytes()) / 1e6,
        static_cast<double>(writer_->buffered_bytes()) / 1e6);
    written_ = 1;
  } catch (int err) {
    writer_->close();
    write_error_ = fmt::format("cannot write /{} to {}: {}{}", names_[dataset], tmp_,
                               std::strerror(err), storage_diagnosis(tmp_));
    written_ = 2;
  }
}

BackgroundSave::~BackgroundSave() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

void BackgroundSave::abandon() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
  ended_ = true;
  status_ = ZRT_ERR_INVALID_STATE;
  message_ = fmt::format("checkpoint {} was not saved: its engine was destroyed first", path_);
}

void BackgroundSave::end_with(const Error &err) {
  ended_ = true;
  status_ = err.status();
  message_ =
      fmt::format("checkpoint {} was not saved: {}; the checkpoints saved before it are kept",
                  path_, err.what());
  staging_ = EngineBuffer();
  if (engine_.rank() == 0) std::remove(tmp_.c_str());
}

bool BackgroundSave::settle(bool wait) {
  if (ended_) return true;
  MPI_Comm comm = engine_.control_comm();
  if (wait && thread_.joinable()) thread_.join();
  int state[2] = {written_ == 2 ? 1 : 0, written_ == 0 ? 1 : 0};  // failed, writing
  try {
    watched_allreduce(comm, state, 2, MPI_INT, MPI_MAX,
                      "agreement on a background checkpoint save");
  } catch (const Error &err) {
    // The ranks are out of step (a timeout): this rank's writer stops, the file stays
    // unpublished, and the staging goes back now, while the engine's pool exists (a request
    // may outlive the engine).
    cancel_ = true;
    if (thread_.joinable()) thread_.join();
    end_with(err);
    throw Error(status_, message_);
  }
  if (state[0] == 0 && state[1] != 0) return false;
  // Failed somewhere, or done everywhere: this rank's writer has ended or is told to.
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
  try {
    run_agreed(comm, [&] {
      if (written_ == 2) throw Error(ZRT_ERR_IO, write_error_);
    });
    publish();
  } catch (const Error &err) {
    end_with(err);
    throw Error(status_, message_);
  }
  ended_ = true;
  staging_ = EngineBuffer();
  return true;
}

void BackgroundSave::publish() {
  h5::Quiet quiet;
  MPI_Comm comm = engine_.control_comm();
  const int nranks = engine_.nranks();
  int64_t n = static_cast<int64_t>(hashes_.size()), most = 0;
  std::vector<int64_t> sizes(static_cast<size_t>(nranks));
  watched_allgather(comm, &n, 1, MPI_INT64_T, sizes.data(), "all-gather of the block count");
  for (int64_t c : sizes)
    most = std::max(most, c);
  hashes_.resize(static_cast<size_t>(most), 0);
  std::vector<uint64_t> all(static_cast<size_t>(most) * static_cast<size_t>(nranks));
  watched_allgather(comm, hashes_.data(), static_cast<int>(most), MPI_UINT64_T, all.data(),
                    "all-gather of the block checksums");
  run_agreed(comm, [&] {
    if (engine_.rank() != 0) return;
    std::vector<std::vector<uint64_t>> blocks(names_.size());
    std::vector<std::vector<bool>> seen(names_.size());
    for (size_t d = 0; d < names_.size(); ++d) {
      blocks[d].assign(block_count(numel_[d], block_), 0);
      seen[d].assign(blocks[d].size(), false);
    }
    for (int r = 0; r < nranks; ++r)
      for (int64_t i = 0; i + 2 < sizes[static_cast<size_t>(r)]; i += 3) {
        const uint64_t *t = all.data() + static_cast<size_t>(r) * static_cast<size_t>(most) +
                            static_cast<size_t>(i);
        blocks[t[0]][t[1]] = t[2];
        seen[t[0]][t[1]] = true;
      }
    h5::Id file = h5::open_file(tmp_, true, MPI_COMM_NULL);
    for (size_t d = 0; d < names_.size(); ++d) {
      for (size_t b = 0; b < seen[d].size(); ++b)
        if (!seen[d][b]) fail(ZRT_ERR_INTERNAL, "no rank wrote block {} of /{}", b, names_[d]);
      h5::Id dataset = h5::open_dataset(file, names_[d]);
      write_checksums(dataset, blocks[d]);
    }
    h5::check(H5Fflush(file, H5F_SCOPE_GLOBAL), "cannot write the checksums to " + tmp_);
    file.reset();
    // Publish atomically: the previous checkpoint stays until this one is complete.
    fsync_path(tmp_, false);
    // An asynchronous save publishes inside the program's step: old files go in the
    // background (checkpoint_paths.hpp).
    const Removal removal = async_ ? Removal::InBackground : Removal::Now;
    replace_file(tmp_, path_, removal);
    fsync_path(directory_of(path_), true);
    prune(pattern_, keep_last_, removal);
  });
  log::info("checkpoint {} saved at step {}", path_, step_);
}

}  // namespace zrt::checkpoint
