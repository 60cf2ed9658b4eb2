#include "model_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <zerort/nn/nearest_name.hpp>

#include "layer.hpp"
#include "yaml_document.hpp"

namespace zrt::nn::model {

double LrSchedule::lr(int64_t t) const {
  const double pi = 3.14159265358979323846;
  if (type == "step") return base_lr * std::pow(gamma, static_cast<double>(t / step_size));
  if (type == "multistep") {
    const auto passed =
        std::count_if(milestones.begin(), milestones.end(), [&](int64_t m) { return m <= t; });
    return base_lr * std::pow(gamma, static_cast<double>(passed));
  }
  const double done =
      static_cast<double>(std::min(t, total_iters)) / static_cast<double>(total_iters);
  if (type == "polynomial") return base_lr * std::pow(1.0 - done, power);
  if (type == "linear") return base_lr * (start_factor + (end_factor - start_factor) * done);
  if (type == "cosine_annealing")
    return eta_min + (base_lr - eta_min) *
                         (1 + std::cos(pi * static_cast<double>(t) / static_cast<double>(t_max))) /
                         2;
  return base_lr;
}

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

[[noreturn]] void bad(const std::string &source, const std::string &what) {
  throw std::invalid_argument(fmt::format("model config {}: {}", source, what));
}

const nlohmann::json &object_at(const nlohmann::json &doc, const char *key,
                                const std::string &source) {
  const nlohmann::json &v = doc.at(key);
  if (!v.is_object()) bad(source, fmt::format("\"{}\" must be an object, not {}", key, v.dump()));
  return v;
}

LossKind parse_loss(const nlohmann::json &loss, const std::string &source, bool &sum) {
  check_keys(loss, {"type", "reduction", "parameters"},
             fmt::format("model config {}: \"loss\"", source));
  const std::vector<std::string_view> kinds = {"mse", "l1", "cross_entropy", "external"};
  const std::string type = lower(loss.value("type", std::string()));
  std::string reduction = loss.value("reduction", std::string("mean"));
  if (loss.contains(
          "parameters")) {  // TorchFort: {"type": "MSE", "parameters": {"reduction": "mean"}}
    check_keys(loss.at("parameters"), {"reduction"},
               fmt::format("model config {}: \"loss.parameters\"", source));
    reduction = loss.at("parameters").value("reduction", reduction);
  }
  if (reduction != "mean" && reduction != "sum")
    bad(source, fmt::format("loss reduction \"{}\": \"mean\" or \"sum\"", reduction));
  sum = reduction == "sum";
  if (type == "mse") return LossKind::mse;
  if (type == "l1") return LossKind::l1;
  if (type == "cross_entropy" || type == "crossentropy") return LossKind::cross_entropy;
  if (type == "external") return LossKind::external;
  const std::string near = nearest_name(type, kinds, 3);
  bad(source, fmt::format("unknown loss type \"{}\"{}; known: {}", type,
                          near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near),
                          fmt::join(kinds, ", ")));
}

LrSchedule parse_schedule(const nlohmann::json &s, const std::string &source) {
  const std::string where = fmt::format("model config {}: \"lr_scheduler\"", source);
  check_keys(s, {"type", "parameters"}, where);
  LrSchedule l;
  l.type = lower(s.value("type", std::string()));
  const nlohmann::json p = s.value("parameters", nlohmann::json::object());
  auto keys = [&](std::vector<std::string_view> k) { check_keys(p, k, where + ".parameters"); };
  if (l.type == "step") {
    keys({"step_size", "gamma"});
    l.step_size = p.value("step_size", int64_t{1});
    l.gamma = p.value("gamma", 0.1);
  } else if (l.type == "multistep") {
    keys({"milestones", "gamma"});
    l.milestones = p.value("milestones", std::vector<int64_t>{});
    l.gamma = p.value("gamma", 0.1);
  } else if (l.type == "polynomial") {
    keys({"total_iters", "power"});
    l.total_iters = p.value("total_iters", int64_t{5});
    l.power = p.value("power", 1.0);
  } else if (l.type == "cosine_annealing") {
    keys({"T_max", "eta_min"});
    l.t_max = p.value("T_max", int64_t{1});
    l.eta_min = p.value("eta_min", 0.0);
  } else if (l.type == "linear") {
    keys({"total_iters", "start_factor", "end_factor"});
    l.total_iters = p.value("total_iters", int64_t{5});
    l.start_factor = p.value("start_factor", 1.0 / 3);
    l.end_factor = p.value("end_factor", 1.0);
  } else {
    const std::vector<std::string_view> types = {"step", "multistep", "polynomial",
                                                 "cosine_annealing", "linear"};
    const std::string near = nearest_name(l.type, types, 3);
    bad(source, fmt::format("unknown lr_scheduler type \"{}\"{}; known: {}", l.type,
                            near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near),
                            fmt::join(types, ", ")));
  }
  if (l.step_size <= 0 || l.total_iters <= 0 || l.t_max <= 0)
    bad(source, "lr_scheduler: step_size, total_iters and T_max must be positive");
  return l;
}

// TorchFort's "optimizer" block as DeepSpeed's.
nlohmann::json torchfort_optimizer(const nlohmann::json &o, const std::string &source) {
  const std::string where = fmt::format("model config {}: \"optimizer\"", source);
  check_keys(o, {"type", "parameters"}, where);
  const std::string type = lower(o.value("type", std::string("adam")));
  const nlohmann::json p = o.value("parameters", nlohmann::json::object());
  nlohmann::json params = nlohmann::json::object();
  if (p.contains("learning_rate")) params["lr"] = p.at("learning_rate");
  if (type == "adam" || type == "adamw") {
    check_keys(p, {"learning_rate", "beta1", "beta2", "weight_decay", "eps", "amsgrad"},
               where + ".parameters");
    if (p.value("amsgrad", false))
      bad(source, "optimizer.parameters.amsgrad: zerort's Adam has no AMSGrad; set it false");
    params["betas"] = {p.value("beta1", 0.9), p.value("beta2", 0.999)};
    for (const char *k : {"weight_decay", "eps"})
      if (p.contains(k)) params[k] = p.at(k);
    // torch.optim.Adam adds weight decay to the gradient (L2); AdamW decouples it.
    if (type == "adam") params["adam_w_mode"] = false;
    return {{"type", type == "adam" ? "Adam" : "AdamW"}, {"params", params}};
  }
  if (type == "sgd") {
    check_keys(p, {"learning_rate", "momentum", "weight_decay", "nesterov", "dampening"},
               where + ".parameters");
    if (p.value("dampening", 0.0) != 0.0)
      bad(source, "optimizer.parameters.dampening: zerort's SGD has none; set it 0");
    for (const char *k : {"momentum", "weight_decay", "nesterov"})
      if (p.contains(k)) params[k] = p.at(k);
    return {{"type", "SGD"}, {"params", params}};
  }
  bad(source, fmt::format("optimizer type \"{}\": TorchFort's adam, adamw or sgd", type));
}

// TorchFort's MLP: linear, relu, dropout for each hidden layer, then linear.
nlohmann::json torchfort_mlp(const nlohmann::json &m, const std::string &source,
                             std::vector<int64_t> &input) {
  const std::string where = fmt::format("model config {}: \"model\"", source);
  check_keys(m, {"type", "parameters"}, where);
  const nlohmann::json p = m.value("parameters", nlohmann::json::object());
  check_keys(p, {"layer_sizes", "dropout", "flatten_non_batch_dims"}, where + ".parameters");
  const auto sizes = p.value("layer_sizes", std::vector<int64_t>{});
  if (sizes.size() < 2)
    bad(source, "model.parameters.layer_sizes: at least the input and the output size");
  if (!p.value("flatten_non_batch_dims", true))
    bad(source, "model.parameters.flatten_non_batch_dims false: zerort's MLP flattens each sample");
  const double dropout = p.value("dropout", 0.0);
  input = {sizes[0]};
  nlohmann::json layers = nlohmann::json::array();
  for (size_t i = 1; i < sizes.size(); ++i) {
    layers.push_back({{"type", "linear"}, {"features", sizes[i]}});
    if (i + 1 < sizes.size()) {
      layers.push_back({{"type", "relu"}});
      if (dropout > 0) layers.push_back({{"type", "dropout"}, {"p", dropout}});
    }
  }
  return layers;
}

}  // namespace

ModelConfig parse_model_config(const nlohmann::json &doc_in, const std::string &source) {
  if (!doc_in.is_object()) bad(source, "the configuration must be a JSON object");
  nlohmann::json doc = doc_in;
  ModelConfig c;
  c.source = source;
  if (!doc.contains("model"))
    bad(source, "\"model\" is required: {\"input\": [...], \"layers\": [...]}");
  const nlohmann::json &m = object_at(doc, "model", source);
  const bool torchfort = m.contains("type");
  if (torchfort) {
    const std::string type = lower(m.at("type").get<std::string>());
    if (type != "mlp")
      bad(source,
          fmt::format("model type \"{}\": of TorchFort's built-in models zerort reads \"mlp\"; "
                      "other models are written as zerort's \"layers\"",
                      type));
    c.layers = torchfort_mlp(m, source, c.input);
    c.decay_all = true;
  } else {
    check_keys(m, {"input", "layers"}, fmt::format("model config {}: \"model\"", source));
    if (!m.contains("input") || !m.at("input").is_array() || m.at("input").empty())
      bad(source, "model.input: the per-sample shape, e.g. [64] or [16, 32]");
    for (const auto &d : m.at("input")) {
      if (!d.is_number_integer() || d.get<int64_t>() <= 0)
        bad(source, fmt::format("model.input: {} has a dimension that is not a positive integer",
                                m.at("input").dump()));
      c.input.push_back(d.get<int64_t>());
    }
    if (!m.contains("layers") || !m.at("layers").is_array() || m.at("layers").empty())
      bad(source, "model.layers: a non-empty list of layers");
    c.layers = m.at("layers");
  }
  doc.erase("model");
  if (doc.contains("loss")) {
    c.loss = parse_loss(object_at(doc, "loss", source), source, c.loss_sum);
    doc.erase("loss");
  }
  if (doc.contains("seed")) {
    if (!doc.at("seed").is_number_unsigned())
      bad(source, "\"seed\" must be a non-negative integer");
    c.seed = doc.at("seed").get<uint64_t>();
    doc.erase("seed");
  }
  if (doc.contains("general")) {  // TorchFort's
    const nlohmann::json &g = object_at(doc, "general", source);
    check_keys(g, {"report_frequency", "verbose", "enable_wandb_hook"},
               fmt::format("model config {}: \"general\"", source));
    c.report_frequency = g.value("report_frequency", int64_t{0});
    c.verbose = g.value("verbose", false);
    if (g.value("enable_wandb_hook", false))
      bad(source, "general.enable_wandb_hook: zerort has no Weights & Biases hook; set it false");
    doc.erase("general");
  }
  if (torchfort && doc.contains("optimizer") && doc.at("optimizer").contains("parameters"))
    doc["optimizer"] = torchfort_optimizer(object_at(doc, "optimizer", source), source);
  if (doc.contains("lr_scheduler")) {
    if (doc.contains("scheduler"))
      bad(source, "both \"lr_scheduler\" (TorchFort's) and \"scheduler\" (DeepSpeed's): keep one");
    c.schedule = parse_schedule(object_at(doc, "lr_scheduler", source), source);
    doc.erase("lr_scheduler");
  }
  c.engine_settings = doc;  // the engine refuses what it does not know, naming the nearest key
  return c;
}

ModelConfig read_model_config(const std::string &config) {
  const auto first = config.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && config[first] == '{') {
    try {
      return parse_model_config(nlohmann::json::parse(config), "(JSON text)");
    } catch (const nlohmann::json::parse_error &e) {
      bad("(JSON text)", fmt::format("not valid JSON: {}", e.what()));
    }
  }
  const bool yaml = config.ends_with(".yaml") || config.ends_with(".yml");
  if (yaml) return parse_model_config(read_yaml_file(config), config);
  std::ifstream in(config);
  if (!in) bad(config, fmt::format("cannot be opened: {}", std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  try {
    return parse_model_config(nlohmann::json::parse(text.str()), config);
  } catch (const nlohmann::json::parse_error &e) {
    bad(config, fmt::format("not valid JSON: {}", e.what()));
  }
}

}  // namespace zrt::nn::model
