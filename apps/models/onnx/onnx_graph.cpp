#include "onnx_graph.hpp"

#include <fmt/format.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>
#include <zerort/zerort.h>

#include <algorithm>
#include <stdexcept>

#include "model_stream.hpp"

namespace zonnx {
namespace {

namespace pb = google::protobuf;

// protobuf's bytes into an OutputFile, keeping the file's error (the system's reason), which
// protobuf reports only as false.
class FileSink : public pb::io::CopyingOutputStream {
 public:
  explicit FileSink(files::OutputFile &file) : file_(file) {}
  bool Write(const void *buffer, int size) override {
    try {
      file_.write(buffer, static_cast<size_t>(size));
      return true;
    } catch (const files::Error &e) {
      error_ = e.what();
      return false;
    }
  }
  // Throws the file's error, if a write failed.
  void throw_if_failed() const {
    if (!error_.empty()) throw std::runtime_error(error_);
  }

 private:
  files::OutputFile &file_;
  std::string error_;
};

std::filesystem::path partial(const std::filesystem::path &p) {
  return p.string() + ".partial";
}

onnx::TensorProto_DataType proto_type(ElemType t) {
  return t == ElemType::float32 ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64;
}

void value_info(onnx::ValueInfoProto *vi, const std::string &name, ElemType type,
                const std::vector<Dim> &dims) {
  vi->set_name(name);
  auto *tensor = vi->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(proto_type(type));
  auto *shape = tensor->mutable_shape();
  for (const Dim &d : dims) {
    auto *dim = shape->add_dim();
    if (const int64_t *size = std::get_if<int64_t>(&d))
      dim->set_dim_value(*size);
    else
      dim->set_dim_param(std::get<std::string>(d));
  }
}

}  // namespace

OnnxGraph::OnnxGraph(const std::string &name, const std::filesystem::path &model_path,
                     const std::string &external_data, bool fp16_weights)
    : model_(std::make_unique<onnx::ModelProto>()),
      external_name_(external_data),
      fp16_(fp16_weights) {
  // IR 8 and opset 17: what ONNX 1.12's checker knows (ONNX Runtime 1.30 reads IR 3-13).
  model_->set_ir_version(8);
  model_->set_producer_name("zerort");
  model_->set_producer_version("zrt-ckpt");
  auto *opset = model_->add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  graph_ = model_->mutable_graph();
  graph_->set_name(name);
  if (!external_name_.empty()) {
    // Under a temporary name until write(): a failed export leaves an earlier one whole.
    external_path_ = model_path.parent_path() / external_name_;
    external_ = std::make_unique<files::OutputFile>(partial(external_path_));
  }
}

void OnnxGraph::input(const std::string &name, ElemType type, const std::vector<Dim> &dims) {
  value_info(graph_->add_input(), name, type, dims);
}

void OnnxGraph::output(const std::string &name, ElemType type, const std::vector<Dim> &dims) {
  value_info(graph_->add_output(), name, type, dims);
}

std::string OnnxGraph::weight(const std::string &name, const std::vector<int64_t> &shape,
                              WeightValues values) {
  const int index = graph_->initializer_size();
  auto *t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(fp16_ ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT);
  int64_t count = 1;
  for (int64_t d : shape) {
    t->add_dims(d);
    count *= d;
  }
  const int64_t size = count * (fp16_ ? 2 : 4);
  weight_bytes_ += size;
  if (!external_name_.empty()) {
    // Where its bytes will go, known from its size alone: written by write().
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [key, value] : {std::pair{"location", external_name_},
                              std::pair{"offset", std::to_string(external_offset_)},
                              std::pair{"length", std::to_string(size)}}) {
      auto *e = t->add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
    external_offset_ += size;
  }
  pending_.push_back({index, count, std::move(values)});
  if (!fp16_) return name;
  return node("Cast", {name}, name + "_fp32", {{"to", int64_t{onnx::TensorProto::FLOAT}}});
}

void OnnxGraph::write_weight(const Pending &p,
                             const std::function<void(const char *, size_t)> &write) {
  const std::string &name = graph_->initializer(p.initializer).name();
  int64_t count = 0;
  std::vector<uint16_t> half;
  p.values([&](const float *values, size_t n) {
    count += static_cast<int64_t>(n);
    if (count > p.count)
      throw std::runtime_error(fmt::format("{}: more than its {} values", name, p.count));
    // raw_data is little-endian, as this host (x86-64, aarch64) is.
    if (!fp16_) {
      write(reinterpret_cast<const char *>(values), n * 4);
      return;
    }
    // In blocks: a whole tensor's fp16 copy would be half its size again.
    constexpr size_t kBlock = size_t{1} << 18;
    half.resize(std::min(n, kBlock));
    for (size_t at = 0; at < n; at += kBlock) {
      const size_t m = std::min(kBlock, n - at);
      if (zrt_dtype_convert(values + at, ZRT_DTYPE_FP32, half.data(), ZRT_DTYPE_FP16, m) !=
          ZRT_SUCCESS)
        throw std::runtime_error(fmt::format("{} to fp16: {}", name, zrt_last_error_message()));
      write(reinterpret_cast<const char *>(half.data()), m * 2);
    }
  });
  if (count != p.count)
    throw std::runtime_error(fmt::format("{}: {} values, its shape says {}", name, count, p.count));
}

std::string OnnxGraph::ints(const std::vector<int64_t> &values, const std::vector<int64_t> &shape) {
  auto *t = graph_->add_initializer();
  const std::string name = fmt::format("const_{}", next_++);
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : shape)
    t->add_dims(d);
  for (int64_t v : values)
    t->add_int64_data(v);
  return name;
}

std::string OnnxGraph::scalar(float value) {
  auto *t = graph_->add_initializer();
  const std::string name = fmt::format("const_{}", next_++);
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_float_data(value);
  return name;
}

std::vector<std::string> OnnxGraph::nodes(const std::string &op,
                                          const std::vector<std::string> &inputs,
                                          const std::string &hint, int outputs,
                                          const std::vector<Attr> &attrs) {
  auto *n = graph_->add_node();
  n->set_op_type(op);
  n->set_name(fmt::format("{}_{}", hint, next_));
  for (const std::string &in : inputs)
    n->add_input(in);
  std::vector<std::string> names;
  for (int i = 0; i < outputs; ++i) {
    names.push_back(fmt::format("{}_{}{}", hint, next_, outputs > 1 ? fmt::format("_{}", i) : ""));
    n->add_output(names.back());
  }
  ++next_;
  for (const Attr &a : attrs) {
    auto *p = n->add_attribute();
    p->set_name(a.name);
    if (const int64_t *i = std::get_if<int64_t>(&a.value)) {
      p->set_type(onnx::AttributeProto::INT);
      p->set_i(*i);
    } else if (const float *f = std::get_if<float>(&a.value)) {
      p->set_type(onnx::AttributeProto::FLOAT);
      p->set_f(*f);
    } else {
      p->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : std::get<std::vector<int64_t>>(a.value))
        p->add_ints(v);
    }
  }
  return names;
}

std::string OnnxGraph::node(const std::string &op, const std::vector<std::string> &inputs,
                            const std::string &hint, const std::vector<Attr> &attrs) {
  return nodes(op, inputs, hint, 1, attrs)[0];
}

void OnnxGraph::name_output(const std::string &value, const std::string &name) {
  auto *n = graph_->add_node();
  n->set_op_type("Identity");
  n->set_name(name);
  n->add_input(value);
  n->add_output(name);
}

OnnxGraph::~OnnxGraph() {
  // Not written (or written but not moved): the side file goes.
  external_.reset();
  std::error_code ignored;
  if (!external_path_.empty()) std::filesystem::remove(partial(external_path_), ignored);
}

void OnnxGraph::write(const std::filesystem::path &path) {
  files::OutputFile out(path);
  FileSink sink(out);
  // Buffered: protobuf writes a model's small fields a few bytes at a time.
  pb::io::CopyingOutputStreamAdaptor stream(&sink);
  if (!external_name_.empty()) {
    for (const Pending &p : pending_)
      write_weight(p, [&](const char *bytes, size_t size) { external_->write(bytes, size); });
    external_->close();
    if (!model_->SerializeToZeroCopyStream(&stream)) {
      sink.throw_if_failed();
      throw std::runtime_error(fmt::format("cannot serialize the model to {}", path.string()));
    }
  } else {
    std::vector<StreamedRawData> inline_data;
    for (const Pending &p : pending_)
      inline_data.push_back(
          {p.initializer, static_cast<uint64_t>(p.count * (fp16_ ? 2 : 4)),
           [this, pending = &p](const ByteSink &sink) { write_weight(*pending, sink); }});
    try {
      serialize_streamed(*model_, inline_data, stream);
    } catch (const std::length_error &) {
      throw std::runtime_error(fmt::format(
          "cannot serialize the model to {} ({} of weights inline: past protobuf's 2 GB, use "
          "--external-data)",
          path.string(), weight_bytes_));
    } catch (const StreamFailed &) {
      sink.throw_if_failed();
      throw;
    }
  }
  if (!stream.Flush()) {
    sink.throw_if_failed();
    throw std::runtime_error(fmt::format("cannot write {}", path.string()));
  }
  out.close();
  // The weights under their name once the model that names them is written.
  if (!external_path_.empty()) std::filesystem::rename(partial(external_path_), external_path_);
}

}  // namespace zonnx
