// zrt_model_export's ONNX: the inference graph (dropout as the identity) with its weights
// inline, built with ONNX's own protobuf classes (IR 8, opset 17), input "input" and output
// "output" of a dynamic batch. Rank 0 writes PATH.partial and renames it.
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "configured_model.hpp"
#include "onnx_writer.hpp"

namespace zrt::nn::model {

namespace {

class ProtoWriter final : public OnnxWriter {
 public:
  ProtoWriter(onnx::GraphProto &graph, const std::vector<TensorSpec> &layout,
              const std::vector<std::vector<float>> &values)
      : graph_(graph), layout_(layout), values_(values) {}

  std::string node(const std::string &op, const std::vector<std::string> &inputs,
                   const std::string &name, const std::vector<OnnxAttr> &attrs,
                   int outputs) override {
    const std::string out = unique(name);
    onnx::NodeProto *n = graph_.add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const std::string &i : inputs)
      n->add_input(i);
    n->add_output(out);
    for (int k = 1; k < outputs; ++k)
      n->add_output(fmt::format("{}:{}", out, k));
    for (const OnnxAttr &a : attrs) {
      onnx::AttributeProto *p = n->add_attribute();
      p->set_name(a.name);
      if (auto *i = std::get_if<int64_t>(&a.value)) {
        p->set_type(onnx::AttributeProto::INT);
        p->set_i(*i);
      } else if (auto *f = std::get_if<float>(&a.value)) {
        p->set_type(onnx::AttributeProto::FLOAT);
        p->set_f(*f);
      } else {
        p->set_type(onnx::AttributeProto::INTS);
        for (int64_t v : std::get<std::vector<int64_t>>(a.value))
          p->add_ints(v);
      }
    }
    return out;
  }

  std::string parameter(int id) override {
    const TensorSpec &t = layout_.at(static_cast<size_t>(id));
    if (!added_.insert(id).second) return t.name;
    onnx::TensorProto *p = graph_.add_initializer();
    p->set_name(t.name);
    p->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : t.shape)
      p->add_dims(d);
    const auto &v = values_.at(static_cast<size_t>(id));
    p->set_raw_data(
        std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float)));
    return t.name;
  }

  std::string ints(const std::string &name, const std::vector<int64_t> &values) override {
    const std::string n = unique(name);
    onnx::TensorProto *p = graph_.add_initializer();
    p->set_name(n);
    p->set_data_type(onnx::TensorProto::INT64);
    p->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values)
      p->add_int64_data(v);
    return n;
  }

  std::string floats(const std::string &name, const std::vector<int64_t> &shape,
                     const std::vector<float> &values) override {
    const std::string n = unique(name);
    onnx::TensorProto *p = graph_.add_initializer();
    p->set_name(n);
    p->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape)
      p->add_dims(d);
    for (float v : values)
      p->add_float_data(v);
    return n;
  }

  std::string scalar(const std::string &name, float value) override {
    return floats(name, {}, {value});
  }

 private:
  std::string unique(const std::string &name) {
    const int k = used_[name]++;
    return k == 0 ? name : fmt::format("{}_{}", name, k);
  }
  onnx::GraphProto &graph_;
  const std::vector<TensorSpec> &layout_;
  const std::vector<std::vector<float>> &values_;
  std::map<std::string, int> used_;
  std::set<int> added_;
};

void value_info(onnx::ValueInfoProto *v, const std::string &name, const Shape &per_sample) {
  v->set_name(name);
  onnx::TypeProto_Tensor *t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_param("batch");
  for (int64_t d : per_sample)
    t->mutable_shape()->add_dim()->set_dim_value(d);
}

}  // namespace

void Model::export_onnx(const std::string &path) {
  const std::vector<std::vector<float>> values = gather_all();  // collective
  if (rank_ != 0) return;
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("zerort");
  model.add_opset_import()->set_version(17);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("zerort_model");
  ProtoWriter writer(*graph, layout_, values);
  value_info(graph->add_input(), "input", net_->in_shape());
  const std::string y = net_->to_onnx(writer, "input", "");
  static_cast<OnnxWriter &>(writer).node("Identity", {y}, "output");
  value_info(graph->add_output(), "output", net_->out_shape());
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out)
      throw StatusError(ZRT_ERR_IO,
                        fmt::format("{}: cannot be created: {}", partial, std::strerror(errno)));
    if (!model.SerializeToOstream(&out) || !out.flush()) {
      out.close();
      std::remove(partial.c_str());
      throw StatusError(ZRT_ERR_IO, fmt::format("{}: writing failed", path));
    }
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    std::remove(partial.c_str());
    throw StatusError(ZRT_ERR_IO, fmt::format("{}: {}", path, ec.message()));
  }
}

}  // namespace zrt::nn::model
