// zrt-ckpt: look inside zerort checkpoints, check them, compare them, and move weights in
// and out of them (safetensors for PyTorch and Hugging Face users).
//
//   zrt-ckpt inspect FILE [--json] [--attributes]
//   zrt-ckpt verify FILE
//   zrt-ckpt diff A B
//   zrt-ckpt export FILE --format safetensors|hdf5-fp32 --output OUT [--dtype bf16]
//            [--names hf [--model gpt2|bert]]
//   zrt-ckpt export FILE --format onnx --output OUT [--model gpt2|bert] [--external-data]
//   zrt-ckpt import-safetensors IN OUT [--rename FROM=TO ...] [--names hf --model gpt2|bert]
//
// Exit status: 0 on success (for verify: all checksums match and no value is NaN or Inf;
// for diff: identical), 1 when
// verify or diff find a difference, 2 on errors.
#include <fmt/format.h>
#include <zerort/zerort.h>
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hf_names.hpp"
#include "onnx_export.hpp"
#include "safetensors.hpp"
#include "tensor_blocks.hpp"
#include "weights_file.hpp"

namespace {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(zrt_status_t st, const std::string &what) {
  if (st != ZRT_SUCCESS) throw Failure(fmt::format("{}: {}", what, zrt_last_error_message()));
}

using Reader = weights::CheckpointReader;

// A weights-only checkpoint being written, as PATH.partial (which zerort writes as
// PATH.partial.tmp until it is closed): moved to PATH by finish(), removed otherwise, so that
// a failed export leaves no file, and an earlier PATH whole.
class Writer {
 public:
  Writer(const std::string &path, const std::string &metadata)
      : path_(path), partial_(path + ".partial") {
    check(zrt_checkpoint_create(partial_.c_str(), metadata.c_str(), &h_), "cannot create " + path);
  }
  ~Writer() {
    if (!h_) return;
    zrt_checkpoint_close(h_);
    std::remove(partial_.c_str());
  }
  Writer(const Writer &) = delete;
  Writer &operator=(const Writer &) = delete;
  void write(const std::string &name, const std::vector<int64_t> &shape, const float *values) {
    check(zrt_checkpoint_write(h_, name.c_str(), static_cast<int>(shape.size()), shape.data(),
                               values),
          "cannot write " + name);
  }
  void finish() {
    zrt_checkpoint_h h = h_;
    h_ = nullptr;
    if (zrt_checkpoint_close(h) != ZRT_SUCCESS) {
      const std::string why = zrt_last_error_message();
      std::remove(partial_.c_str());
      throw Failure(fmt::format("cannot finish {}: {}", path_, why));
    }
    if (std::rename(partial_.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      std::remove(partial_.c_str());
      throw Failure(fmt::format("cannot rename {} to {}: {}", partial_, path_, std::strerror(err)));
    }
  }

 private:
  std::string path_, partial_;
  zrt_checkpoint_h h_ = nullptr;
};

nlohmann::json describe(const std::string &path) {
  size_t n = 0;
  check(zrt_checkpoint_describe(path.c_str(), nullptr, 0, &n), "cannot read " + path);
  std::string text(n + 1, '\0');
  check(zrt_checkpoint_describe(path.c_str(), text.data(), text.size(), &n), "cannot read " + path);
  text.resize(n);
  return nlohmann::json::parse(text);
}

std::string shape_text(const zrt_checkpoint_tensor_t &t) {
  std::vector<int64_t> s(t.shape, t.shape + t.ndim);
  return fmt::format("[{}]", fmt::join(s, ", "));
}

/// @p attributes_only: the attributes without the table, reading no tensor (a glance at a
/// large file, or a script that wants the step).
int inspect(const std::string &path, bool json, bool attributes_only) {
  nlohmann::json d = describe(path);
  Reader r(path);
  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::string> bad;  // tensors whose checksum does not match
  for (int i = 0; i < (attributes_only ? 0 : r.count()); ++i) {
    zrt_checkpoint_tensor_t t = r.tensor(i);
    std::vector<float> v = r.read(i);
    double sq = 0;
    for (float x : v)
      sq += static_cast<double>(x) * x;
    const char *status = !t.has_checksum ? "none" : r.verify(i) ? "ok" : "BAD";
    if (std::string_view(status) == "BAD") bad.push_back(t.name);
    rows.push_back({{"tensor", t.name},
                    {"shape", std::vector<int64_t>(t.shape, t.shape + t.ndim)},
                    {"numel", t.numel},
                    {"dtype", "fp32"},
                    {"norm", std::sqrt(sq)},
                    {"checksum", status}});
  }
  // A damaged tensor makes the whole inspection fail (exit 1), after the table.
  const auto verdict = [&] {
    if (bad.empty()) return 0;
    fmt::print(stderr, "zrt-ckpt: {}: {} tensor(s) fail their checksum: {}\n", path, bad.size(),
               fmt::join(bad, ", "));
    return 1;
  };
  if (json) {
    nlohmann::json out{{"file", path}, {"attributes", d}};
    if (!attributes_only) out["tensors"] = rows;
    fmt::print("{}\n", out.dump(2));
    return verdict();
  }
  const int stage = d.value("stage", -1), world = d.value("world_size", 0);
  // A weights-only file (import-safetensors, export) was saved by no engine.
  const std::string saved = stage < 0 ? std::string("weights only (no engine state)")
                                      : fmt::format("saved at stage {} on {} rank{}", stage, world,
                                                    world == 1 ? "" : "s");
  fmt::print("{}: format {}, zerort {}, step {}, {}, {} compute, optimizer state: {}\n", path,
             d.value("format_version", 0), d.value("zerort_version", "?"), d.value("step", 0),
             saved, d.value("compute_dtype", "?"), d.value("optimizer_state", "?"));
  if (d.contains("metadata") && !d["metadata"].empty())
    fmt::print("metadata: {}\n", d["metadata"].dump());
  if (attributes_only) return 0;
  size_t width = 6;
  for (const auto &row : rows)
    width = std::max(width, row["tensor"].get<std::string>().size());
  fmt::print("{:<{}}  {:<18} {:>10} {:>5} {:>12}  {}\n", "tensor", width, "shape", "numel", "dtype",
             "norm", "checksum");
  for (const auto &row : rows)
    fmt::print("{:<{}}  {:<18} {:>10} {:>5} {:>12.6g}  {}\n", row["tensor"].get<std::string>(),
               width, row["shape"].dump(), row["numel"].get<int64_t>(), "fp32",
               row["norm"].get<double>(), row["checksum"].get<std::string>());
  return verdict();
}

int verify(const std::string &path) {
  Reader r(path);
  int bad = 0;
  for (int i = 0; i < r.count(); ++i) {
    zrt_checkpoint_tensor_t t = r.tensor(i);
    if (!r.verify(i)) {
      fmt::print("{}: {}\n", t.name,
                 t.has_checksum ? "checksum does not match: corrupted" : "no checksum");
      ++bad;
      continue;
    }
    // Intact bytes can still hold a model that diverged: a NaN or Inf saved by a run that
    // trained through it is as unusable as a corrupted tensor.
    const std::vector<float> v = r.read(i);
    size_t nan = 0, inf = 0;
    for (float x : v) {
      nan += std::isnan(x) ? 1 : 0;
      inf += std::isinf(x) ? 1 : 0;
    }
    if (nan + inf > 0) {
      fmt::print("{}: holds {} NaN and {} Inf of {} values\n", t.name, nan, inf, v.size());
      ++bad;
    }
  }
  fmt::print("{}: {} of {} tensors verified{}\n", path, r.count() - bad, r.count(),
             bad ? ", FAILED" : "");
  return bad ? 1 : 0;
}

int diff(const std::string &a_path, const std::string &b_path) {
  Reader a(a_path), b(b_path);
  std::map<std::string, int> in_b;
  for (int i = 0; i < b.count(); ++i)
    in_b[b.tensor(i).name] = i;
  int differences = 0;
  fmt::print("{:<40} {:>14} {:>14}\n", "tensor", "max |a-b|", "max rel");
  for (int i = 0; i < a.count(); ++i) {
    zrt_checkpoint_tensor_t ta = a.tensor(i);
    auto it = in_b.find(ta.name);
    if (it == in_b.end()) {
      fmt::print("{:<40} only in {}\n", ta.name, a_path);
      ++differences;
      continue;
    }
    const int j = it->second;
    zrt_checkpoint_tensor_t tb = b.tensor(j);
    in_b.erase(it);
    if (shape_text(ta) != shape_text(tb)) {
      fmt::print("{:<40} shapes differ: {} and {}\n", ta.name, shape_text(ta), shape_text(tb));
      ++differences;
      continue;
    }
    std::vector<float> va = a.read(i), vb = b.read(j);
    double max_abs = 0, max_rel = 0;
    for (size_t k = 0; k < va.size(); ++k) {
      double d = std::fabs(static_cast<double>(va[k]) - vb[k]);
      max_abs = std::max(max_abs, d);
      double scale = std::fabs(static_cast<double>(vb[k]));
      if (d > 0) max_rel = std::max(max_rel, scale > 0 ? d / scale : INFINITY);
    }
    if (max_abs > 0) ++differences;
    fmt::print("{:<40} {:>14.6g} {:>14.6g}\n", ta.name, max_abs, max_rel);
  }
  for (const auto &[name, i] : in_b) {
    fmt::print("{:<40} only in {}\n", name, b_path);
    ++differences;
  }
  fmt::print("{} tensor(s) differ\n", differences);
  return differences ? 1 : 0;
}

// The model a checkpoint's weights belong to, for --names hf: --model, else the program
// that saved it (its metadata's "program").
weights::ModelKind model_of(const nlohmann::json &described, const std::string &model,
                            const std::string &path, const char *what = "--names hf") {
  nlohmann::json meta = described.value("metadata", nlohmann::json::object());
  if (meta.is_string()) meta = nlohmann::json::parse(meta.get<std::string>(), nullptr, false);
  const std::string program = meta.is_object() ? meta.value("program", "") : "";
  const std::string name = model.empty() ? program : model;
  auto kind = weights::model_kind(name);
  if (!kind)
    throw Failure(name.empty()
                      ? fmt::format("{}: {} does not say which model it is (no program in its "
                                    "metadata); give --model gpt2 or --model bert",
                                    what, path)
                      : fmt::format("{}: unknown model '{}' (gpt2 or bert)", what, name));
  // --model against what the file says of itself: a BERT checkpoint exported as GPT-2 would
  // otherwise fail on its first tensor, less clearly.
  if (auto saved = weights::model_kind(program); saved && *saved != *kind)
    throw Failure(fmt::format("{}: {} was saved by {}, not a {} program", what, path, program,
                              weights::model_kind_name(*kind)));
  return *kind;
}

// --format onnx: the model and its shape from the checkpoint's metadata (the program that
// saved it), so only the weights' shapes need checking; export_onnx writes the graph.
int onnx_file(const std::string &path, const nlohmann::json &described, const std::string &out,
              const std::string &model, bool external, const std::string &dtype) {
  if (dtype == "bf16")
    throw Failure("--format onnx: --dtype fp32 or fp16 (ONNX Runtime's CPU kernels have no bf16)");
  const weights::ModelKind kind = model_of(described, model, path, "--format onnx");
  const bool is_gpt2 = kind == weights::ModelKind::gpt2;
  nlohmann::json meta = described.value("metadata", nlohmann::json::object());
  if (meta.is_string()) meta = nlohmann::json::parse(meta.get<std::string>(), nullptr, false);
  const nlohmann::json m =
      meta.is_object() ? meta.value("model", nlohmann::json()) : nlohmann::json();
  if (!m.is_object() || !m.contains(is_gpt2 ? "n_layer" : "num_hidden_layers"))
    throw Failure(
        fmt::format("--format onnx: {} does not say the model's shape (no \"model\" "
                    "in its metadata: it was not saved by zrt-{})",
                    path, is_gpt2 ? "gpt2" : "bert"));
  export_onnx({path, out, kind, m, external, dtype == "fp16"});
  return 0;
}

int export_file(const std::string &path, const std::string &format, const std::string &out,
                const std::string &dtype, const std::string &names, const std::string &model,
                bool external) {
  nlohmann::json d = describe(path);
  if (format == "onnx") {
    return onnx_file(path, d, out, model, external, dtype);
  }
  if (names == "hf" && format != "safetensors")
    throw Failure("--names hf: Hugging Face's names are for --format safetensors");
  std::optional<weights::ModelKind> kind;
  if (names == "hf") kind = model_of(d, model, path);
  // Names and shapes first, from the file's table: no value is read until it is written,
  // and then one tensor at a time.
  struct Planned {
    int index;
    std::string name;
    std::vector<int64_t> shape;  // as written
    bool transposed = false;     // a 2-D tensor written the other way round
  };
  Reader r(path);
  std::vector<Planned> tensors;
  for (int i = 0; i < r.count(); ++i) {
    zrt_checkpoint_tensor_t t = r.tensor(i);
    std::string name = t.name;
    if (name.rfind("params/", 0) != 0) continue;  // weights only: optimizer state stays behind
    Planned p{i, name.substr(7), std::vector<int64_t>(t.shape, t.shape + t.ndim)};
    if (kind) {
      auto hf = weights::to_hf(*kind, p.name);
      if (!hf)
        throw Failure(fmt::format("--names hf: {} is not a {} tensor (is {} of another model?)",
                                  p.name, weights::model_kind_name(*kind), path));
      if (hf->transposed && p.shape.size() != 2)
        throw Failure(fmt::format("--names hf: {} is {}-D, not a matrix to transpose", p.name,
                                  p.shape.size()));
      p.name = hf->name;
      p.transposed = hf->transposed;
      if (p.transposed) std::swap(p.shape[0], p.shape[1]);
    }
    tensors.push_back(std::move(p));
  }
  if (format == "safetensors") {
    std::string st = dtype == "bf16" ? "BF16" : dtype == "fp16" ? "F16" : "F32";
    std::map<std::string, std::string> meta = {
        {"format", "pt"}, {"zerort_step", std::to_string(d.value("step", 0))}, {"source", path}};
    if (kind) meta["zerort_names"] = "hf";
    std::vector<safetensors::Entry> entries;
    for (const Planned &p : tensors)
      entries.push_back({p.name, p.shape});
    safetensors::Writer w(out, entries, st, meta);
    const weights::BlockSink append = [&](const float *v, size_t n) { w.append(v, n); };
    for (const Planned &p : tensors) {
      const std::vector<float> v = r.read(p.index);
      if (p.transposed)
        weights::transposed_blocks(v, p.shape[1], p.shape[0], append);
      else
        append(v.data(), v.size());
    }
    w.finish();
  } else {
    Writer w(out, nlohmann::json{{"exported_from", path}, {"step", d.value("step", 0)}}.dump());
    for (const Planned &p : tensors)
      w.write(p.name, p.shape, r.read(p.index).data());
    w.finish();
  }
  fmt::print(
      "{}: {} tensors written as {}{}\n", out, tensors.size(), format,
      kind ? fmt::format(" in Hugging Face's {} names", weights::model_kind_name(*kind)) : "");
  return 0;
}

int import_safetensors(const std::string &in, const std::string &out,
                       const std::vector<std::string> &renames, const std::string &names,
                       const std::string &model) {
  std::optional<weights::ModelKind> kind;
  if (names == "hf") {
    kind = weights::model_kind(model);
    if (!kind) throw Failure("--names hf needs --model gpt2 or --model bert");
  }
  std::vector<uint8_t> bytes = safetensors::read_file(in);
  safetensors::File f = safetensors::parse(bytes.data(), bytes.size());
  nlohmann::json meta = {{"imported_from", in}, {"safetensors_metadata", f.metadata}};
  Writer w(out, meta.dump());
  int written = 0, skipped = 0;
  for (const safetensors::Tensor &t : f.tensors) {
    std::string name = t.name;
    std::vector<int64_t> shape = t.shape.empty() ? std::vector<int64_t>{1} : t.shape;
    std::optional<weights::MappedName> ours;
    if (kind) {
      ours = weights::from_hf(*kind, name);
      if (!ours && weights::hf_not_a_parameter(*kind, name)) {
        ++skipped;  // a mask buffer (of any dtype) or a tied copy
        continue;
      }
    }
    std::vector<float> v = safetensors::to_float(t, bytes.data() + f.data_start);
    if (kind) {
      if (!ours) {
        throw Failure(fmt::format("--names hf: {} is not a {} tensor", name,
                                  weights::model_kind_name(*kind)));
      }
      name = ours->name;
      if (ours->transposed && shape.size() == 2) v = weights::transposed(v, shape);
    }
    for (const std::string &r : renames) {
      size_t eq = r.find('=');
      if (eq == std::string::npos) throw Failure("--rename takes FROM=TO, not " + r);
      if (name.rfind(r.substr(0, eq), 0) == 0) {
        name = r.substr(eq + 1) + name.substr(eq);
        break;
      }
    }
    w.write(name, shape, v.data());
    ++written;
  }
  w.finish();
  fmt::print("{}: {} tensors imported from {}{}\n", out, written, in,
             skipped ? fmt::format(" ({} buffers and tied copies skipped)", skipped) : "");
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"zrt-ckpt: inspect, verify, compare, export and import zerort checkpoints"};
  app.require_subcommand(1);
  std::string file, other, format, output, dtype = "fp32", names = "zerort", model;
  std::vector<std::string> renames;
  bool json = false, attributes_only = false, external = false;
  auto *inspect_cmd =
      app.add_subcommand("inspect", "attributes and a table of tensors, norms, checksums");
  inspect_cmd->add_option("file", file, "checkpoint")->required();
  inspect_cmd->add_flag("--json", json, "JSON instead of a table");
  inspect_cmd->add_flag("--attributes", attributes_only,
                        "the attributes only, without reading the tensors (quick on a large file)");
  auto *verify_cmd = app.add_subcommand(
      "verify", "recompute every checksum and look for NaN and Inf (exit 1 on either)");
  verify_cmd->add_option("file", file, "checkpoint")->required();
  auto *diff_cmd =
      app.add_subcommand("diff", "max absolute and relative difference per tensor (exit 1 if any)");
  diff_cmd->add_option("a", file, "checkpoint A")->required();
  diff_cmd->add_option("b", other, "checkpoint B")->required();
  auto *export_cmd =
      app.add_subcommand("export", "the weights as safetensors or a weights-only checkpoint");
  export_cmd->add_option("file", file, "checkpoint")->required();
  export_cmd->add_option("--format", format, "safetensors, hdf5-fp32 or onnx")
      ->required()
      ->check(CLI::IsMember({"safetensors", "hdf5-fp32", "onnx"}));
  export_cmd->add_flag("--external-data", external,
                       "onnx: the weights in OUT.data beside the model (ONNX's external data; "
                       "automatic past 1.5 GB)");
  export_cmd->add_option("--output,-o", output, "output file")->required();
  export_cmd
      ->add_option("--dtype", dtype,
                   "the weights' dtype: fp32, bf16, fp16 (onnx: fp32 or fp16, computed in fp32)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  export_cmd
      ->add_option("--names", names, "zerort (as stored) or hf (Hugging Face's names and layouts)")
      ->check(CLI::IsMember({"zerort", "hf"}));
  export_cmd->add_option("--model", model,
                         "gpt2 or bert, for --names hf (default: the program that saved it)");
  auto *import_cmd =
      app.add_subcommand("import-safetensors", "a weights-only checkpoint from safetensors");
  import_cmd->add_option("input", file, "safetensors file")->required();
  import_cmd->add_option("output", output, "checkpoint to write")->required();
  import_cmd->add_option("--rename", renames, "FROM=TO: replace a name prefix (repeatable)");
  import_cmd
      ->add_option("--names", names,
                   "zerort (as stored) or hf (Hugging Face's, mapped to the model's)")
      ->check(CLI::IsMember({"zerort", "hf"}));
  import_cmd->add_option("--model", model, "gpt2 or bert, for --names hf");
  CLI11_PARSE(app, argc, argv);
  try {
    if (*inspect_cmd) return inspect(file, json, attributes_only);
    if (*verify_cmd) return verify(file);
    if (*diff_cmd) return diff(file, other);
    if (*export_cmd) return export_file(file, format, output, dtype, names, model, external);
    if (*import_cmd) return import_safetensors(file, output, renames, names, model);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "zrt-ckpt: %s\n", e.what());
    return 2;
  }
  return 2;
}
