#include "optim/checkpoint/checkpoint_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "optim/checkpoint/block_checksums.hpp"
#include "optim/checkpoint/block_plan.hpp"
#include "optim/checkpoint/checkpoint_io.hpp"
#include "optim/checkpoint/checkpoint_paths.hpp"
#include "zerort/version.h"

namespace zrt {

std::unique_ptr<CheckpointFile> CheckpointFile::open(const std::string &path) {
  h5::Quiet quiet;
  std::unique_ptr<CheckpointFile> f(new CheckpointFile);
  f->path_ = path;
  f->file_ = h5::open_file(path, false, MPI_COMM_NULL);
  int64_t version = h5::read_attr_int(f->file_, "format_version");
  if (version > checkpoint::kFormatVersion)
    fail(ZRT_ERR_IO, "{} has format version {}, newer than this zerort reads ({})", path, version,
         checkpoint::kFormatVersion);
  f->version_ = version;
  if (version >= 2) {
    const int64_t block = h5::read_attr_int(f->file_, "checksum_block");
    if (block <= 0)
      fail(ZRT_ERR_IO, "{} has checksum_block {}: the file is corrupted", path, block);
    f->block_ = static_cast<size_t>(block);
  }
  std::vector<std::string> names = h5::list_datasets(f->file_);
  f->names_.reserve(names.size());
  for (const std::string &n : names)
    f->add_tensor(n);
  return f;
}

std::unique_ptr<CheckpointFile> CheckpointFile::create(const std::string &path,
                                                       const std::string &metadata) {
  if (!metadata.empty() && !nlohmann::json::accept(metadata))
    fail(ZRT_ERR_INVALID_ARGUMENT, "metadata is not valid JSON");
  h5::Quiet quiet;
  std::unique_ptr<CheckpointFile> f(new CheckpointFile);
  f->path_ = path;
  f->tmp_ = path + ".tmp";
  f->writable_ = true;
  f->file_ = h5::create_file(f->tmp_, MPI_COMM_NULL);
  h5::write_attr(f->file_, "format_version", checkpoint::kFormatVersion);
  h5::write_attr(f->file_, "zerort_version", std::string(ZRT_VERSION_STRING));
  h5::write_attr(f->file_, "step", int64_t{0});
  h5::write_attr(f->file_, "stage", int64_t{-1});
  h5::write_attr(f->file_, "world_size", int64_t{1});
  h5::write_attr(f->file_, "compute_dtype", std::string("fp32"));
  h5::write_attr(f->file_, "optimizer", std::string("{}"));
  h5::write_attr(f->file_, "optimizer_state", std::string("none"));
  h5::write_attr(f->file_, "loss_scaler", std::string(R"({"dynamic": false})"));
  h5::write_attr(f->file_, "config", std::string("{}"));
  h5::write_attr(f->file_, "metadata", metadata.empty() ? std::string("{}") : metadata);
  h5::write_attr(f->file_, "checksum_block", static_cast<int64_t>(checkpoint::kBlockElements));
  f->version_ = checkpoint::kFormatVersion;
  f->block_ = checkpoint::kBlockElements;
  return f;
}

CheckpointFile::~CheckpointFile() {
  h5::Quiet quiet;  // a failed close reports nothing anyone reads
  if (writable_ && !closed_) {
    // Never published: drop the partial file.
    file_.reset();
    std::remove(tmp_.c_str());
  }
}

void CheckpointFile::add_tensor(const std::string &name) {
  h5::Id d = h5::open_dataset(file_, name);
  std::vector<int64_t> shape = h5::dataset_shape(d);
  if (shape.size() > 8)
    fail(ZRT_ERR_IO, "dataset /{} has {} dimensions; at most 8 are supported", name, shape.size());
  names_.push_back(name);
  zrt_checkpoint_tensor_t t{};
  t.ndim = static_cast<int>(shape.size());
  t.numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    t.shape[i] = shape[i];
    t.numel *= shape[i];
  }
  t.has_checksum = h5::has_attr(d, "xxh3") ? 1 : 0;
  if (t.has_checksum) t.checksum = h5::read_attr_uint(d, "xxh3");
  tensors_.push_back(t);
  // Names last: names_ may have moved; refresh every pointer.
  for (size_t i = 0; i < tensors_.size(); ++i)
    tensors_[i].name = names_[i].c_str();
}

const zrt_checkpoint_tensor_t &CheckpointFile::tensor(int index) const {
  if (index < 0 || index >= count())
    fail(ZRT_ERR_INVALID_ARGUMENT, "index is {}: accepted values are 0 .. {}", index, count() - 1);
  return tensors_[static_cast<size_t>(index)];
}

void CheckpointFile::read(int index, float *values) const {
  const zrt_checkpoint_tensor_t &t = tensor(index);
  require_nonnull(values, "values");
  h5::Quiet quiet;
  h5::Id d = h5::open_dataset(file_, t.name);
  h5::check(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values),
            std::string("cannot read /") + t.name + " (truncated file?)");
}

bool CheckpointFile::verify(int index) const {
  const zrt_checkpoint_tensor_t &t = tensor(index);
  h5::Quiet quiet;
  h5::Id d = h5::open_dataset(file_, t.name);
  if (!t.has_checksum) return false;
  if (version_ < 2) return checkpoint::dataset_hash(d.get()) == t.checksum;
  if (!h5::has_attr(d, "xxh3_blocks")) return false;
  std::vector<float> values(static_cast<size_t>(t.numel));
  read(index, values.data());
  const std::vector<uint64_t> blocks =
      checkpoint::block_hashes(values.data(), values.size(), block_);
  return blocks == h5::read_attr_uint_array(d, "xxh3_blocks") &&
         checkpoint::dataset_checksum(blocks) == t.checksum;
}

void CheckpointFile::write(const std::string &name, const std::vector<int64_t> &shape,
                           const float *values) {
  if (!writable_) fail(ZRT_ERR_INVALID_STATE, "the checkpoint was opened read-only");
  if (closed_) fail(ZRT_ERR_INVALID_STATE, "the checkpoint is closed");
  if (name.empty()) fail(ZRT_ERR_INVALID_ARGUMENT, "name is empty");
  if (shape.empty() || shape.size() > 8)
    fail(ZRT_ERR_INVALID_ARGUMENT, "ndim is {}: accepted values are 1 .. 8", shape.size());
  size_t numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] <= 0)
      fail(ZRT_ERR_INVALID_ARGUMENT, "shape[{}] is {}: extents must be positive", i, shape[i]);
    numel *= static_cast<size_t>(shape[i]);
  }
  require_nonnull(values, "values");
  const std::string full = checkpoint::params_name(name);
  h5::Quiet quiet;
  written_.check(name);  // first: a group of another's path also "exists"
  if (h5::exists(file_, full)) fail(ZRT_ERR_INVALID_ARGUMENT, "'{}' was already written", name);
  // Refused before HDF5 writes: the metadata it writes at close needs room too.
  haddr_t size_now = 0;
  H5Fget_eoa(file_, &size_now);
  if (const std::string shortfall =
          checkpoint::room_shortfall(tmp_, size_now, numel * sizeof(float));
      !shortfall.empty())
    fail(ZRT_ERR_IO, "cannot write '{}' to {}: {}", name, tmp_, shortfall);
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  h5::Id space(h5::check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                         "H5Screate_simple"),
               H5Sclose);
  h5::Id lcpl(h5::check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate"), H5Pclose);
  H5Pset_create_intermediate_group(lcpl, 1);
  h5::Id d(h5::check(H5Dcreate2(file_, full.c_str(), H5T_IEEE_F32LE, space, lcpl, H5P_DEFAULT,
                                H5P_DEFAULT),
                     "cannot create /" + full),
           H5Dclose);
  try {
    h5::check(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values),
              "cannot write /" + full);
  } catch (const Error &) {
    d.reset();
    h5::drop_dataset(file_, full);  // so that the file can still be closed (and removed)
    throw;
  }
  checkpoint::write_checksums(d, checkpoint::block_hashes(values, numel, block_));
  d.reset();
  written_.insert(name);
  add_tensor(full);
}

void CheckpointFile::close() {
  if (closed_) return;
  closed_ = true;
  h5::Quiet quiet;
  const herr_t status = file_.close();
  if (!writable_) return;
  if (status < 0) {
    const int err = errno;
    std::remove(tmp_.c_str());  // never published
    errno = err;
    h5::check(status, "cannot finish " + tmp_);
  }
  checkpoint::replace_file(tmp_, path_, checkpoint::Removal::Now);
}

}  // namespace zrt
