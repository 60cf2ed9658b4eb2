#include "weights_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "files/regular_file.hpp"
#include "safetensors.hpp"

namespace weights {
namespace {

void check(zrt_status_t st, const std::string &what) {
  if (st != ZRT_SUCCESS) throw Error(fmt::format("{}: {}", what, zrt_last_error_message()));
}

// Whether the file open at fd begins as an HDF5 file (a zerort checkpoint) does; anything
// else is read as safetensors, whose parser says what is wrong with a file that is neither.
bool is_hdf5(int fd) {
  const unsigned char magic[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  unsigned char head[8] = {0};
  return ::pread(fd, head, sizeof head, 0) == sizeof head &&
         std::memcmp(head, magic, sizeof magic) == 0;
}

}  // namespace

CheckpointReader::CheckpointReader(const std::string &path) {
  check(zrt_checkpoint_open(path.c_str(), &h_), "cannot open " + path);
}
CheckpointReader::~CheckpointReader() {
  zrt_checkpoint_close(h_);
}
int CheckpointReader::count() const {
  int n = 0;
  check(zrt_checkpoint_tensor_count(h_, &n), "zrt_checkpoint_tensor_count");
  return n;
}
zrt_checkpoint_tensor_t CheckpointReader::tensor(int i) const {
  zrt_checkpoint_tensor_t t{};
  t.field_mask = ZRT_CHECKPOINT_TENSOR_FIELD_ALL;
  check(zrt_checkpoint_tensor(h_, i, &t), "zrt_checkpoint_tensor");
  return t;
}
std::vector<float> CheckpointReader::read(int i) const {
  std::vector<float> v(static_cast<size_t>(tensor(i).numel));
  check(zrt_checkpoint_read(h_, i, v.data()), std::string("cannot read ") + tensor(i).name);
  return v;
}
bool CheckpointReader::verify(int i) const {
  int ok = 0;
  check(zrt_checkpoint_verify(h_, i, &ok), std::string("cannot verify ") + tensor(i).name);
  return ok != 0;
}

// The safetensors file mapped read-only: the parser checks the header against the size.
struct WeightsFile::Mapped {
  void *base = MAP_FAILED;
  size_t size = 0;
  safetensors::File file;
  ~Mapped() {
    if (base != MAP_FAILED) ::munmap(base, size);
  }
  const uint8_t *bytes() const { return static_cast<const uint8_t *>(base); }
};

WeightsFile::WeightsFile(const std::filesystem::path &path) : path_(path) {
  int fd = -1;
  try {
    fd = files::open_regular(path);  // a FIFO would block open(2) for ever
  } catch (const files::Error &e) {
    throw Error(fmt::format("{}: cannot open: {}", path.string(), e.reason()));
  }
  if (is_hdf5(fd)) {
    ::close(fd);
    checkpoint_ = std::make_unique<CheckpointReader>(path.string());
    // An engine's checkpoint holds params/NAME beside its optimizer state; a weights-only
    // one holds NAME alone.
    bool engine = false;
    for (int i = 0; i < checkpoint_->count(); ++i)
      engine = engine || std::string_view(checkpoint_->tensor(i).name).starts_with("params/");
    for (int i = 0; i < checkpoint_->count(); ++i) {
      zrt_checkpoint_tensor_t t = checkpoint_->tensor(i);
      std::string name = t.name;
      if (engine && !name.starts_with("params/")) continue;
      if (engine) name.erase(0, 7);
      tensors_.push_back({name, std::vector<int64_t>(t.shape, t.shape + t.ndim)});
      checkpoint_index_.push_back(i);
    }
    return;
  }
  auto m = std::make_unique<Mapped>();
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(fmt::format("{}: cannot open: {}", path.string(), std::strerror(err)));
  }
  m->size = static_cast<size_t>(st.st_size);
  if (m->size > 0) m->base = ::mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m->size > 0 && m->base == MAP_FAILED)
    throw Error(fmt::format("{}: cannot map: {}", path.string(), std::strerror(errno)));
  try {
    m->file = safetensors::parse(m->bytes(), m->size);
  } catch (const safetensors::Error &e) {
    throw Error(fmt::format("{}: neither a zerort checkpoint nor a valid safetensors file: {}",
                            path.string(), e.what()));
  }
  for (const safetensors::Tensor &t : m->file.tensors)
    tensors_.push_back({t.name, t.shape});
  safetensors_ = std::move(m);
}

WeightsFile::~WeightsFile() = default;
WeightsFile::WeightsFile(WeightsFile &&) noexcept = default;
WeightsFile &WeightsFile::operator=(WeightsFile &&) noexcept = default;

std::vector<float> WeightsFile::read(size_t index) const {
  if (safetensors_) {
    const safetensors::Tensor &t = safetensors_->file.tensors.at(index);
    try {
      return safetensors::to_float(t, safetensors_->bytes() + safetensors_->file.data_start);
    } catch (const safetensors::Error &e) {
      throw Error(fmt::format("{}: {}: {}", path_.string(), t.name, e.what()));
    }
  }
  const int i = checkpoint_index_.at(index);
  std::vector<float> v = checkpoint_->read(i);
  if (!checkpoint_->verify(i))
    throw Error(fmt::format("{}: tensor {} does not match its checksum (the file is damaged)",
                            path_.string(), tensors_[index].name));
  return v;
}

}  // namespace weights
