#include "model_stream.hpp"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>

#include <climits>
#include <memory>
#include <stdexcept>
#include <string>

namespace zonnx {
namespace {

namespace pb = google::protobuf;
using pb::internal::WireFormatLite;

// The fields of ONNX 1.12 that the stream goes through.
constexpr int kModelGraph = 7, kGraphInitializer = 5, kTensorRawData = 9;

// @p m's serialized fields numbered below @p number (@p below) or above it: with the field
// itself between them, the message's bytes.
std::string fields_beside(const pb::Message &m, int number, bool below) {
  std::unique_ptr<pb::Message> part(m.New());
  part->CopyFrom(m);
  const pb::Reflection *r = part->GetReflection();
  std::vector<const pb::FieldDescriptor *> set;
  r->ListFields(*part, &set);
  for (const pb::FieldDescriptor *f : set)
    if (below ? f->number() >= number : f->number() <= number) r->ClearField(part.get(), f);
  return part->SerializeAsString();
}

uint32_t delimited_tag(int number) {
  return WireFormatLite::MakeTag(number, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
}

// Bytes of a length-delimited field of @p size bytes: tag, length, payload.
uint64_t delimited_size(int number, uint64_t size) {
  return pb::io::CodedOutputStream::VarintSize32(delimited_tag(number)) +
         pb::io::CodedOutputStream::VarintSize64(size) + size;
}

void start_delimited(pb::io::CodedOutputStream &c, int number, uint64_t size) {
  c.WriteTag(delimited_tag(number));
  c.WriteVarint64(size);
}

}  // namespace

void serialize_streamed(const onnx::ModelProto &model, const std::vector<StreamedRawData> &tensors,
                        pb::io::ZeroCopyOutputStream &out) {
  const onnx::GraphProto &graph = model.graph();
  // Each initializer's size with its raw_data, then the graph's and the model's.
  std::vector<uint64_t> sizes(static_cast<size_t>(graph.initializer_size()));
  std::vector<const StreamedRawData *> streamed(sizes.size(), nullptr);
  for (const StreamedRawData &t : tensors)
    streamed.at(static_cast<size_t>(t.initializer)) = &t;
  const std::string model_below = fields_beside(model, kModelGraph, true),
                    model_above = fields_beside(model, kModelGraph, false),
                    graph_below = fields_beside(graph, kGraphInitializer, true),
                    graph_above = fields_beside(graph, kGraphInitializer, false);
  uint64_t graph_size = graph_below.size() + graph_above.size();
  for (size_t i = 0; i < sizes.size(); ++i) {
    sizes[i] = graph.initializer(static_cast<int>(i)).ByteSizeLong();
    if (streamed[i]) sizes[i] += delimited_size(kTensorRawData, streamed[i]->bytes);
    graph_size += delimited_size(kGraphInitializer, sizes[i]);
  }
  const uint64_t total =
      model_below.size() + delimited_size(kModelGraph, graph_size) + model_above.size();
  if (total > static_cast<uint64_t>(INT_MAX))
    throw std::length_error(fmt::format("a model of {} bytes", total));

  pb::io::CodedOutputStream c(&out);
  c.WriteRaw(model_below.data(), static_cast<int>(model_below.size()));
  start_delimited(c, kModelGraph, graph_size);
  c.WriteRaw(graph_below.data(), static_cast<int>(graph_below.size()));
  for (size_t i = 0; i < sizes.size(); ++i) {
    const onnx::TensorProto &t = graph.initializer(static_cast<int>(i));
    start_delimited(c, kGraphInitializer, sizes[i]);
    if (!streamed[i]) {
      t.SerializeWithCachedSizes(&c);  // cached by ByteSizeLong above
      continue;
    }
    const std::string below = fields_beside(t, kTensorRawData, true),
                      above = fields_beside(t, kTensorRawData, false);
    c.WriteRaw(below.data(), static_cast<int>(below.size()));
    start_delimited(c, kTensorRawData, streamed[i]->bytes);
    uint64_t written = 0;
    streamed[i]->write([&](const char *bytes, size_t size) {
      c.WriteRaw(bytes, static_cast<int>(size));
      written += size;
    });
    if (written != streamed[i]->bytes)
      throw std::runtime_error(fmt::format("{}: {} bytes of raw_data, {} announced", t.name(),
                                           written, streamed[i]->bytes));
    c.WriteRaw(above.data(), static_cast<int>(above.size()));
    if (c.HadError()) throw StreamFailed("the stream failed");  // before the next weight's read
  }
  c.WriteRaw(graph_above.data(), static_cast<int>(graph_above.size()));
  c.WriteRaw(model_above.data(), static_cast<int>(model_above.size()));
  c.Trim();
  if (c.HadError()) throw StreamFailed("the stream failed");
}

}  // namespace zonnx
