#include "optim/checkpoint/checkpoint_io.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <tuple>

#include "optim/checkpoint/background_save.hpp"
#include "optim/checkpoint/block_checksums.hpp"
#include "optim/checkpoint/block_reader.hpp"
#include "optim/checkpoint/blocks.hpp"
#include "optim/checkpoint/checkpoint_paths.hpp"
#include "optim/checkpoint/h5.hpp"
#include "optim/zero_engine.hpp"
#include "runtime/agree.hpp"
#include "runtime/log.hpp"
#include "zerort/version.h"

namespace zrt::checkpoint {

namespace {

constexpr size_t kHashChunk = size_t{1} << 22;  // elements read at a time when hashing

std::string shape_text(const std::vector<int64_t> &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// The runs of each parameter this rank holds, merged where they touch: what it reads.
std::map<int, std::vector<std::pair<size_t, size_t>>> held_intervals(const Engine &e) {
  const bool everything = e.stage_layout().updates_everything;
  std::map<int, std::vector<std::pair<size_t, size_t>>> out;
  for (const Engine::StatePiece &p : e.state_pieces())
    if (everything || p.owner == e.rank()) out[p.param].emplace_back(p.param_offset, p.count);
  for (auto &[param, runs] : out) {
    std::sort(runs.begin(), runs.end());
    std::vector<std::pair<size_t, size_t>> merged;
    for (const auto &r : runs)
      if (!merged.empty() && merged.back().first + merged.back().second == r.first)
        merged.back().second += r.second;
      else
        merged.push_back(r);
    runs = merged;
  }
  return out;
}

// The blocks [first, last) that the runs of one parameter touch, each once: runs that do
// not touch can share a block (at stage 3 with small buckets a rank holds thousands of runs
// of one parameter, and hashing their shared blocks again for each took seconds).
std::vector<std::pair<size_t, size_t>> blocks_of(const std::vector<std::pair<size_t, size_t>> &runs,
                                                 size_t block) {
  std::vector<std::pair<size_t, size_t>> out;
  for (const auto &[begin, count] : runs) {  // sorted by begin (held_intervals)
    const size_t first = first_block(begin, block), last = end_block(begin, count, block);
    if (!out.empty() && first <= out.back().second)
      out.back().second = std::max(out.back().second, last);
    else
      out.emplace_back(first, last);
  }
  return out;
}

}  // namespace

std::string expand_path(const std::string &pattern, int64_t step) {
  std::string out = pattern;
  for (size_t at; (at = out.find("{step}")) != std::string::npos;)
    out.replace(at, 6, fmt::format("{:08d}", step));
  return out;
}

std::string params_name(const std::string &param) {
  return "params/" + param;
}

std::vector<std::string> state_names(const std::string &kind) {
  if (kind == "adam") return {"optimizer/exp_avg/", "optimizer/exp_avg_sq/"};
  if (kind == "momentum") return {"optimizer/momentum_buffer/"};
  return {};
}

uint64_t dataset_hash(int64_t dataset_id) {
  const hid_t dataset = static_cast<hid_t>(dataset_id);
  std::vector<int64_t> shape = h5::dataset_shape(dataset);
  size_t total = 1;
  for (int64_t d : shape)
    total *= static_cast<size_t>(d);
  XXH3_state_t *state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::vector<float> chunk(std::min(total, kHashChunk));
  h5::Id space(h5::check(H5Dget_space(dataset), "H5Dget_space"), H5Sclose);
  try {
    for (size_t begin = 0; begin < total; begin += kHashChunk) {
      size_t n = std::min(kHashChunk, total - begin);
      select_runs(space, shape, {{begin, n}});
      hsize_t dims[1] = {n};
      h5::Id mem(h5::check(H5Screate_simple(1, dims, nullptr), "H5Screate_simple"), H5Sclose);
      h5::check(H5Dread(dataset, H5T_NATIVE_FLOAT, mem, space, H5P_DEFAULT, chunk.data()),
                "cannot read a dataset to check it (truncated file?)");
      XXH3_64bits_update(state, chunk.data(), n * sizeof(float));
    }
  } catch (...) {
    XXH3_freeState(state);
    throw;
  }
  uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return h;
}

void save(Engine &e, const std::string &pattern, const std::string &metadata, int keep_last) {
  e.settle_save(true);  // one save at a time: an asynchronous one before this is finished
  BackgroundSave::start(e, pattern, metadata, keep_last, false)->settle(true);
}

std::shared_ptr<BackgroundSave> save_async(Engine &e, const std::string &pattern,
                                           const std::string &metadata, int keep_last) {
  e.settle_save(true);
  std::shared_ptr<BackgroundSave> s = BackgroundSave::start(e, pattern, metadata, keep_last, true);
  e.set_pending_save(s);
  return s;
}

nlohmann::json describe(const std::string &path) {
  h5::Quiet quiet;
  h5::Id file = h5::open_file(path, false, MPI_COMM_NULL);
  nlohmann::json out;
  int64_t version = h5::read_attr_int(file, "format_version");
  out["format_version"] = version;
  if (version > kFormatVersion) return out;
  out["zerort_version"] = h5::read_attr_string(file, "zerort_version");
  out["step"] = h5::read_attr_int(file, "step");
  out["stage"] = h5::read_attr_int(file, "stage");
  out["world_size"] = h5::read_attr_int(file, "world_size");
  out["compute_dtype"] = h5::read_attr_string(file, "compute_dtype");
  out["optimizer_state"] = h5::read_attr_string(file, "optimizer_state");
  for (const char *key : {"optimizer", "loss_scaler", "config", "metadata"}) {
    std::string text = h5::read_attr_string(file, key);
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    out[key] = j.is_discarded() ? nlohmann::json(text) : j;
  }
  return out;
}

void load(Engine &e, const std::string &path) {
  e.settle_save(true);  // a save still writing finishes before the state changes
  // Where a load's time goes, in the debug log: what a user tuning storage asks first.
  const double t_start = MPI_Wtime();
  double t_metadata = 0, t_verified = 0, t_copied = 0;
  h5::Quiet quiet;
  MPI_Comm comm = e.control_comm();
  std::string kind;
  int64_t step = 0;
  nlohmann::json scaler;
  // Agree on the file first: a rank that cannot see it fails every rank, naming it.
  same_path_on_every_rank(comm, path, "zrt_checkpoint_load");
  run_agreed(comm, [&] { h5::check_readable(path); });
  // Every rank reads the file's metadata itself, serially: it is small, and no collective
  // open is needed (MPI-IO's open hangs when one rank cannot see the file).
  const std::map<int, std::vector<std::pair<size_t, size_t>>> held = held_intervals(e);
  std::vector<std::vector<Source>> sources(static_cast<size_t>(e.param_count()));
  run_agreed(comm, [&] {
    e.require_between_steps("zrt_checkpoint_load");
    h5::Id file = h5::open_file(path, false, MPI_COMM_NULL);
    int64_t version = h5::read_attr_int(file, "format_version");
    if (version > kFormatVersion)
      fail(ZRT_ERR_IO,
           "{} has format version {}, newer than this zerort ({}) reads ({}): upgrade zerort", path,
           version, ZRT_VERSION_STRING, kFormatVersion);
    kind = h5::read_attr_string(file, "optimizer_state");
    step = h5::read_attr_int(file, "step");
    scaler = nlohmann::json::parse(h5::read_attr_string(file, "loss_scaler"));
    // The model the file holds must be the model registered: every name, every shape.
    for (int p = 0; p < e.param_count(); ++p) {
      const ParamInfo &info = e.param(p);
      h5::Id d = h5::open_dataset(file, params_name(info.name));
      std::vector<int64_t> shape = h5::dataset_shape(d);
      if (shape != info.shape)
        fail(ZRT_ERR_IO, "dataset /{} has shape {} but the engine registered '{}' with shape {}",
             params_name(info.name), shape_text(shape), info.name, shape_text(info.shape));
    }
    const std::string mine = optimizer_state_kind(e);
    if (kind != "none" && kind != mine)
      fail(ZRT_ERR_IO,
           "{} holds '{}' optimizer state but the engine's optimizer keeps '{}' state: load it "
           "with the optimizer it was saved with",
           path, kind, mine);
    size_t block = 0;  // format 1: each dataset is one block
    if (version >= 2) {
      const int64_t b = h5::read_attr_int(file, "checksum_block");
      if (b <= 0) fail(ZRT_ERR_IO, "{} has checksum_block {}: the file is corrupted", path, b);
      block = static_cast<size_t>(b);
    }
    std::error_code size_error;
    const uint64_t file_bytes = std::filesystem::file_size(path, size_error);
    if (size_error) fail(ZRT_ERR_IO, "cannot read the size of {}: {}", path, size_error.message());
    for (int p = 0; p < e.param_count(); ++p) {
      if (held.count(p) == 0) continue;
      const ParamInfo &info = e.param(p);
      for (const auto &array : state_arrays(kind)) {
        Source src;
        src.name = array.first + info.name;
        src.numel = info.numel;
        h5::Id d = h5::open_dataset(file, src.name);
        if (h5::dataset_shape(d) != info.shape)
          fail(ZRT_ERR_IO, "dataset /{} has shape {} but /{} has {}", src.name,
               shape_text(h5::dataset_shape(d)), params_name(info.name), shape_text(info.shape));
        if (block > 0) {
          src.block = block;
          src.hashes = read_block_checksums(d, src.name, src.numel, block);
        } else {
          if (!h5::has_attr(d, "xxh3")) fail(ZRT_ERR_IO, "dataset /{} has no checksum", src.name);
          src.block = std::max<size_t>(src.numel, 1);
          src.hashes = {h5::read_attr_uint(d, "xxh3")};
        }
        h5::Id dcpl(h5::check(H5Dget_create_plist(d), "H5Dget_create_plist"), H5Pclose);
        const haddr_t at = H5Dget_offset(d);
        src.contiguous = H5Pget_layout(dcpl) == H5D_CONTIGUOUS && at != HADDR_UNDEF;
        if (src.contiguous) {
          src.offset = static_cast<uint64_t>(at);
          if (src.offset + src.numel * sizeof(float) > file_bytes)
            fail(ZRT_ERR_IO, "dataset /{} ends past the end of {} (a truncated file?)", src.name,
                 path);
        } else {  // written by another tool: HDF5 reads it (whole, as format 1 hashes it)
          src.values.resize(src.numel);
          h5::check(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, src.values.data()),
                    "cannot read /" + src.name + " (truncated file?)");
        }
        sources[static_cast<size_t>(p)].push_back(std::move(src));
      }
    }
  });

  t_metadata = MPI_Wtime();
  const bool direct = e.context().config().get_string("checkpoint.direct_io") != "off";
  BlockReadStats read;
  bool wrote = false;
  try {
    run_agreed(comm, [&] {
      // The blocks of each parameter this rank takes (every array of a parameter has its grid),
      // and where the part of each it holds goes.
      const auto arrays = state_arrays(kind);
      std::vector<BlockJob> jobs;
      std::map<std::tuple<int, size_t, size_t>, size_t> job_of;  // (param, array, block)
      for (const auto &[p, intervals] : held) {
        const std::vector<Source> &srcs = sources[static_cast<size_t>(p)];
        if (srcs.empty()) continue;
        for (const auto &[first, last] : blocks_of(intervals, srcs.front().block))
          for (size_t k = 0; k < srcs.size(); ++k)
            for (size_t b = first; b < last; ++b) {
              job_of[{p, k, b}] = jobs.size();
              jobs.push_back({&srcs[k], b, {}});
            }
      }
      for (const Engine::StatePiece &piece : e.state_pieces()) {
        if (held.count(piece.param) == 0 ||
            (!e.stage_layout().updates_everything && piece.owner != e.rank()))
          continue;
        const std::vector<Source> &srcs = sources[static_cast<size_t>(piece.param)];
        for (size_t k = 0; k < arrays.size() && k < srcs.size(); ++k) {
          float *dst = piece.*(arrays[k].second);
          if (dst == nullptr || piece.count == 0) continue;
          const size_t block = srcs[k].block, end = piece.param_offset + piece.count;
          for (size_t b = piece.param_offset / block; b * block < end; ++b) {
            const size_t from = std::max(b * block, piece.param_offset),
                         to = std::min((b + 1) * block, end);
            jobs[job_of.at({piece.param, k, b})].targets.push_back(
                {dst + (from - piece.param_offset), piece.on_device, from, to - from});
          }
        }
      }
      read = read_blocks(
          path, jobs, direct,
          [&](void *dst, const void *src, size_t bytes) { e.copy_state(dst, src, bytes); }, &wrote);
    });
  } catch (const Error &err) {
    // A timeout means the ranks are out of step: nothing more may wait for them.
    if (err.status() == ZRT_ERR_TIMEOUT) {
      if (wrote) e.mark_state_incomplete(fmt::format("a load of {} timed out", path));
      throw;
    }
    // Blocks that matched their checksums may have landed before a bad one was found, on
    // any rank: the engine then holds part of the file's state and part of its own.
    int mixed = wrote ? 1 : 0;
    watched_allreduce(comm, &mixed, 1, MPI_INT, MPI_MAX, "agreement on a failed load");
    if (mixed == 0) throw;
    e.mark_state_incomplete(fmt::format("a load of {} failed", path));
    throw Error(err.status(),
                fmt::format("{}; the engine now holds part of that file's state: it refuses to "
                            "step or save until a checkpoint loads or every parameter is set "
                            "again (zrt_param_set)",
                            err.what()));
  }
  t_verified = t_copied = MPI_Wtime();
  // Moments the file does not hold start from zero (a weights-only checkpoint).
  if (kind == "none")
    for (const Engine::StatePiece &piece : e.state_pieces()) {
      const std::vector<float> zeros(piece.count, 0.0f);
      for (float *moment : {piece.m, piece.v})
        if (moment != nullptr) {
          if (piece.on_device)
            e.copy_state(moment, zeros.data(), piece.count * sizeof(float));
          else
            std::fill(moment, moment + piece.count, 0.0f);
        }
    }
  LossScaler::State state = e.scaler().state();
  if (e.scaler().dynamic() && scaler.value("dynamic", false))
    state = {scaler.at("scale").get<double>(), scaler.at("hysteresis_left").get<int>(),
             scaler.at("iteration").get<int64_t>(), scaler.at("last_overflow").get<int64_t>()};
  e.finish_load(kind == "none" ? 0 : step, state);
  const double t_end = MPI_Wtime();
  log::info("checkpoint {} loaded (step {})", path, step);
  log::debug(
      "checkpoint load on this rank: {:.3f} s = metadata {:.3f} + read, check and copy {:.3f} "
      "({} blocks, {} MB, {} threads: {} from the page cache, {} direct, {} buffered, {} mapped) + "
      "engine "
      "(compute copies, parameter all-gather) {:.3f}",
      t_end - t_start, t_metadata - t_start, t_verified - t_metadata, read.blocks,
      read.bytes / 1000000, read.threads, read.cached_blocks, read.direct_blocks,
      read.buffered_blocks, read.mapped_blocks, t_end - t_copied);
}

}  // namespace zrt::checkpoint
