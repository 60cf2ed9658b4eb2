#include "safetensors.hpp"

#include <fmt/format.h>

#include <zerort/zerort.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "files/regular_file.hpp"

namespace safetensors {

namespace {

constexpr size_t kMaxHeader = size_t{100} << 20;  // the reference implementation's bound

void convert(const void *in, zrt_dtype_t from, void *out, zrt_dtype_t to, size_t count) {
  if (zrt_dtype_convert(in, from, out, to, count) != ZRT_SUCCESS)
    throw Error(zrt_last_error_message());
}

}  // namespace

size_t dtype_size(const std::string &d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}

File parse(const uint8_t *bytes, size_t size) {
  if (size < 8)
    throw Error(fmt::format("file of {} bytes: too short for the 8-byte header length", size));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | bytes[i];
  if (n > kMaxHeader) throw Error(fmt::format("header length {} exceeds the 100 MiB limit", n));
  if (n > size - 8)
    throw Error(fmt::format("header length {} runs past the end of the file ({} bytes)", n, size));
  nlohmann::json header = nlohmann::json::parse(bytes + 8, bytes + 8 + n, nullptr, false);
  if (header.is_discarded() || !header.is_object()) throw Error("the header is not a JSON object");
  File f;
  f.data_start = 8 + static_cast<size_t>(n);
  const size_t data_size = size - f.data_start;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) throw Error("__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) throw Error(fmt::format("__metadata__.{} is not a string", m.key()));
        f.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const nlohmann::json &e = *it;
    Tensor t;
    t.name = it.key();
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") ||
        !e.contains("data_offsets"))
      throw Error(fmt::format("tensor '{}' needs dtype, shape and data_offsets", t.name));
    if (!e["dtype"].is_string())
      throw Error(fmt::format("tensor '{}': dtype is not a string", t.name));
    t.dtype = e["dtype"].get<std::string>();
    size_t esize = dtype_size(t.dtype);
    if (esize == 0) throw Error(fmt::format("tensor '{}': unknown dtype {}", t.name, t.dtype));
    if (!e["shape"].is_array() || e["shape"].size() > 8)
      throw Error(fmt::format("tensor '{}': shape must be an array of at most 8 extents", t.name));
    size_t numel = 1;
    for (const auto &d : e["shape"]) {
      if (!d.is_number_unsigned())
        throw Error(fmt::format("tensor '{}': bad extent {}", t.name, d.dump()));
      uint64_t x = d.get<uint64_t>();
      if (x != 0 && numel > (uint64_t{1} << 48) / x)
        throw Error(fmt::format("tensor '{}' is too large", t.name));
      numel *= x;
      t.shape.push_back(static_cast<int64_t>(x));
    }
    const auto &o = e["data_offsets"];
    if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned())
      throw Error(fmt::format("tensor '{}': data_offsets must be [begin, end]", t.name));
    uint64_t begin = o[0].get<uint64_t>(), end = o[1].get<uint64_t>();
    if (begin > end || end > data_size)
      throw Error(fmt::format("tensor '{}': data_offsets [{}, {}] outside the {} bytes of data",
                              t.name, begin, end, data_size));
    if (end - begin != numel * esize)
      throw Error(fmt::format("tensor '{}': {} bytes for {} elements of {}", t.name, end - begin,
                              numel, t.dtype));
    t.offset = static_cast<size_t>(begin);
    t.length = static_cast<size_t>(end - begin);
    f.tensors.push_back(std::move(t));
  }
  std::sort(f.tensors.begin(), f.tensors.end(),
            [](const Tensor &a, const Tensor &b) { return a.offset < b.offset; });
  for (size_t i = 1; i < f.tensors.size(); ++i)
    if (f.tensors[i].offset < f.tensors[i - 1].offset + f.tensors[i - 1].length)
      throw Error(
          fmt::format("tensors '{}' and '{}' overlap", f.tensors[i - 1].name, f.tensors[i].name));
  return f;
}

std::vector<float> to_float(const Tensor &t, const uint8_t *data) {
  const uint8_t *p = data + t.offset;
  const size_t esize = dtype_size(t.dtype);
  const size_t n = t.length / std::max<size_t>(esize, 1);
  zrt_dtype_t from;
  if (t.dtype == "F32")
    from = ZRT_DTYPE_FP32;
  else if (t.dtype == "F64")
    from = ZRT_DTYPE_FP64;
  else if (t.dtype == "BF16")
    from = ZRT_DTYPE_BF16;
  else if (t.dtype == "F16")
    from = ZRT_DTYPE_FP16;
  else
    throw Error(fmt::format("tensor '{}': dtype {} is not a floating-point type", t.name, t.dtype));
  // The bytes may sit at any offset of the file: copy them to aligned memory, then convert
  // with zerort's own rounding, as the engine does.
  std::vector<uint64_t> raw((n * esize + 7) / 8);
  std::memcpy(raw.data(), p, n * esize);
  std::vector<float> out(n);
  convert(raw.data(), from, out.data(), ZRT_DTYPE_FP32, n);
  return out;
}

Writer::Writer(const std::string &path, const std::vector<Entry> &tensors, const std::string &dtype,
               const std::map<std::string, std::string> &metadata)
    : path_(path), partial_(path + ".partial"), dtype_(dtype) {
  esize_ = dtype == "F32" ? 4 : (dtype == "F16" || dtype == "BF16") ? 2 : 0;
  if (esize_ == 0)
    throw Error(fmt::format("cannot write dtype {}: accepted are F32, F16, BF16", dtype));
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const Entry &t : tensors) {
    size_t numel = 1;
    for (int64_t d : t.shape)
      numel *= static_cast<size_t>(d);
    const size_t bytes = numel * esize_;
    header[t.name] = {
        {"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    expected_ += numel;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data aligned, as the reference does
  try {
    out_ = std::make_unique<files::OutputFile>(partial_);
  } catch (const files::Error &e) {
    throw Error(e.what());
  }
  try {
    uint8_t length[8];
    for (int i = 0; i < 8; ++i)
      length[i] = static_cast<uint8_t>((uint64_t{text.size()} >> (8 * i)) & 0xff);
    write(length, sizeof length);
    write(text.data(), text.size());
  } catch (...) {
    out_.reset();  // no destructor runs for a constructor that throws: the file goes here
    std::remove(partial_.c_str());
    throw;
  }
}

Writer::~Writer() {
  if (done_) return;
  out_.reset();
  std::remove(partial_.c_str());
}

void Writer::write(const void *bytes, size_t size) {
  try {
    out_->write(bytes, size);
  } catch (const files::Error &e) {
    throw Error(e.what());
  }
}

void Writer::append(const float *values, size_t count) {
  if (count > expected_ - written_)
    throw Error(fmt::format("{}: more values than the header's {}", path_, expected_));
  written_ += count;
  if (esize_ == 4) {
    write(values, count * 4);
  } else {
    const zrt_dtype_t to = dtype_ == "BF16" ? ZRT_DTYPE_BF16 : ZRT_DTYPE_FP16;
    // In blocks: a converted copy of a whole tensor would be half its size again.
    constexpr size_t kBlock = size_t{1} << 18;
    half_.resize(std::min(count, kBlock));
    for (size_t at = 0; at < count; at += kBlock) {
      const size_t n = std::min(kBlock, count - at);
      convert(values + at, ZRT_DTYPE_FP32, half_.data(), to, n);
      write(half_.data(), n * 2);
    }
  }
}

void Writer::finish() {
  if (written_ != expected_)
    throw Error(
        fmt::format("{}: {} of the header's {} values written", path_, written_, expected_));
  try {
    out_->close();
  } catch (const files::Error &e) {
    throw Error(e.what());
  }
  if (std::rename(partial_.c_str(), path_.c_str()) != 0)
    throw Error(fmt::format("cannot rename {} to {}: {}", partial_, path_, std::strerror(errno)));
  done_ = true;
}

std::vector<uint8_t> read_file(const std::string &path) {
  try {
    const std::string bytes = files::read_regular(path);
    return std::vector<uint8_t>(bytes.begin(), bytes.end());
  } catch (const files::Error &e) {
    throw Error(fmt::format("cannot open {}: {}", path, e.reason()));
  }
}

}  // namespace safetensors
