// The exports' streaming pieces against what they replace, which shares no code with them:
// serialize_streamed against protobuf's own SerializeAsString of the model with every
// raw_data filled in, and transposed_blocks against transposed(); and a model that cannot
// be written, named with the system's reason.
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "hf_names.hpp"
#include "model_stream.hpp"
#include "onnx_graph.hpp"
#include "tensor_blocks.hpp"

namespace {

// A model with initializers of both kinds: weights whose raw_data is streamed (one with a
// field numbered past raw_data, doc_string) and an int64 constant held in the proto.
struct Sample {
  onnx::ModelProto model;        // raw_data left out
  std::vector<std::string> raw;  // per streamed initializer
  std::vector<int> streamed;     // their indices
  std::string expected;          // SerializeAsString with raw_data set
};

Sample sample(size_t weight_bytes) {
  Sample s;
  s.model.set_ir_version(8);
  s.model.set_producer_name("zerort");
  s.model.add_opset_import()->set_version(17);
  onnx::GraphProto *g = s.model.mutable_graph();
  g->set_name("g");
  auto *n = g->add_node();
  n->set_op_type("Identity");
  n->add_input("w0");
  n->add_output("y");
  for (int i = 0; i < 3; ++i) {
    onnx::TensorProto *t = g->add_initializer();
    if (i == 1) {  // held: an int64 constant
      t->set_name("const");
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_int64_data(42);
      continue;
    }
    t->set_name("w" + std::to_string(i));
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(static_cast<int64_t>(weight_bytes / 4));
    if (i == 2) t->set_doc_string("after raw_data");
    std::string bytes(weight_bytes, '\0');
    for (size_t k = 0; k < bytes.size(); ++k)
      bytes[k] = static_cast<char>(k * 7 + i);
    s.raw.push_back(bytes);
    s.streamed.push_back(i);
  }
  g->add_input()->set_name("x");
  g->add_output()->set_name("y");
  onnx::ModelProto whole = s.model;
  for (size_t k = 0; k < s.streamed.size(); ++k)
    whole.mutable_graph()->mutable_initializer(s.streamed[k])->set_raw_data(s.raw[k]);
  s.expected = whole.SerializeAsString();
  return s;
}

std::string streamed(const Sample &s, size_t block, long extra = 0) {
  std::vector<zonnx::StreamedRawData> tensors;
  for (size_t k = 0; k < s.streamed.size(); ++k)
    tensors.push_back({s.streamed[k], s.raw[k].size(), [&, k](const zonnx::ByteSink &sink) {
                         const std::string &r = s.raw[k];
                         for (size_t at = 0; at < r.size(); at += block)
                           sink(r.data() + at, std::min(block, r.size() - at));
                         if (extra > 0) sink(r.data(), static_cast<size_t>(extra));
                       }});
  std::ostringstream out;
  {
    google::protobuf::io::OstreamOutputStream stream(&out);  // flushed when it goes
    zonnx::serialize_streamed(s.model, tensors, stream);
  }
  return out.str();
}

TEST(ModelStream, WritesTheBytesProtobufWritesForTheWholeModel) {
  // 40 bytes: one-byte lengths; 400000: multi-byte varints for the tensors and the graph.
  for (size_t bytes : {size_t{40}, size_t{400000}}) {
    const Sample s = sample(bytes);
    EXPECT_EQ(streamed(s, bytes), s.expected) << bytes << " bytes, one block";
    EXPECT_EQ(streamed(s, 3), s.expected) << bytes << " bytes, blocks of 3";
  }
}

TEST(ModelStream, RefusesRawDataOfAnotherSizeThanAnnounced) {
  const Sample s = sample(40);
  EXPECT_THROW(streamed(s, 40, 4), std::runtime_error);
}

// A model written where every write fails (/dev/full: "No space left on device", as a full
// disk): the message carries the system's reason, not only that a stream failed.
TEST(OnnxGraph, AModelThatCannotBeWrittenSaysWhyInTheSystemsWords) {
  for (const bool large : {false, true}) {  // within protobuf's buffer, and streamed past it
    zonnx::OnnxGraph graph("g", "/dev/full", "");
    const size_t count = large ? 1 << 20 : 4;
    graph.weight("w", {static_cast<int64_t>(count)}, [count](const weights::BlockSink &sink) {
      const std::vector<float> v(count, 1.0f);
      sink(v.data(), v.size());
    });
    std::string error;
    try {
      graph.write("/dev/full");
    } catch (const std::runtime_error &e) {
      error = e.what();
    }
    EXPECT_EQ(error, "/dev/full: cannot write: No space left on device") << large;
  }
}

TEST(TensorBlocks, TransposedBlocksPassWhatTransposedReturns) {
  // A band of one column (rows > kBlockValues would need too large a test), of several,
  // and a matrix in one block.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 5}, {2048, 1500}, {1, 7}, {7, 1}}) {
    std::vector<float> v(static_cast<size_t>(rows * cols));
    std::iota(v.begin(), v.end(), 0.0f);
    std::vector<int64_t> shape = {rows, cols};
    const std::vector<float> want = weights::transposed(v, shape);
    std::vector<float> got;
    size_t calls = 0;
    weights::transposed_blocks(v, rows, cols, [&](const float *p, size_t n) {
      EXPECT_EQ(n % static_cast<size_t>(rows), 0u) << "whole rows of the result";
      got.insert(got.end(), p, p + n);
      ++calls;
    });
    EXPECT_EQ(got, want) << rows << "x" << cols;
    if (rows * cols > static_cast<int64_t>(weights::kBlockValues)) {
      EXPECT_GT(calls, 1u) << "a large matrix comes in several blocks";
    }
  }
}

}  // namespace
