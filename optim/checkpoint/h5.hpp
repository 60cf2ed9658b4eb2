// Thin RAII over the HDF5 C API for the checkpoint code: ids that close themselves, error
// stacks silenced (zerort reports errors its own way) and turned into zrt::Error, and typed
// attribute helpers.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/error.hpp"

namespace zrt::h5 {

// An HDF5 identifier closed with `closer` when it goes out of scope.
class Id {
 public:
  using Closer = herr_t (*)(hid_t);
  Id() = default;
  Id(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Id() { reset(); }
  Id(Id &&o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), closer_(o.closer_) {}
  Id &operator=(Id &&o) noexcept {
    reset();
    id_ = std::exchange(o.id_, H5I_INVALID_HID);
    closer_ = o.closer_;
    return *this;
  }
  Id(const Id &) = delete;
  Id &operator=(const Id &) = delete;
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  void reset() { (void)close(); }
  // Closes now; returns the closer's status (negative on failure: a file that could not be
  // flushed).
  herr_t close() {
    const herr_t status = id_ >= 0 && closer_ != nullptr ? closer_(id_) : 0;
    id_ = H5I_INVALID_HID;
    return status;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Silences HDF5's automatic error printing while alive (and restores the caller's handler).
class Quiet {
 public:
  Quiet();
  ~Quiet();
  Quiet(const Quiet &) = delete;
  Quiet &operator=(const Quiet &) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void *data_ = nullptr;
};

// Throws Error(ZRT_ERR_IO) "what: <HDF5's innermost message>" when id or status is negative.
hid_t check(hid_t id, const std::string &what);
// The innermost message of HDF5's current error stack ("" if none).
std::string last_message();

// Throws Error(ZRT_ERR_IO) "cannot open checkpoint PATH: REASON" unless path is a non-empty
// regular file this process may read, REASON in the words of the system where it can say
// ("No such file or directory", "Permission denied"), else what the path is ("it is a FIFO
// (named pipe), not a regular file", "the file is empty"). Nothing it opens can block.
void check_readable(const std::string &path);

// Checks the path first (check_readable): H5Fopen would wait for ever on a FIFO.
Id open_file(const std::string &path, bool writable,
             MPI_Comm comm);  // comm: MPI_COMM_NULL = serial
// alignment: where above 1, datasets of at least that many bytes start on a multiple of it.
Id create_file(const std::string &path, MPI_Comm comm, hsize_t alignment = 0);
Id open_dataset(hid_t file, const std::string &name);
// Unlinks dataset @p name, whose values could not be written (closed already), and gives its
// space back: HDF5 shrinks the file's end when the dataset was last, and the file is cut
// there. Without it, a full disk (or ulimit -f) makes HDF5's flush at close fail, and a
// failed H5Fclose leaves HDF5 1.10 with a file that crashes the process at exit.
void drop_dataset(hid_t file, const std::string &name);
bool exists(hid_t file, const std::string &name);

void write_attr(hid_t object, const char *name, const std::string &value);
void write_attr(hid_t object, const char *name, int64_t value);
void write_attr(hid_t object, const char *name, uint64_t value);
void write_attr(hid_t object, const char *name, double value);
void write_attr(hid_t object, const char *name, const std::vector<uint64_t> &values);
bool has_attr(hid_t object, const char *name);
std::string read_attr_string(hid_t object, const char *name);
int64_t read_attr_int(hid_t object, const char *name);
uint64_t read_attr_uint(hid_t object, const char *name);
std::vector<uint64_t> read_attr_uint_array(hid_t object, const char *name);
double read_attr_double(hid_t object, const char *name);

// Every dataset under the file's root, as full paths without the leading '/', in order.
std::vector<std::string> list_datasets(hid_t file);
std::vector<int64_t> dataset_shape(hid_t dataset);

}  // namespace zrt::h5
