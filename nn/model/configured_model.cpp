#include "configured_model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>

#include <zerort/comm.h>
#include <zerort/nn/engine_model_state.hpp>

#include "loss.hpp"
#include "tensor_io.hpp"

namespace zrt::nn::model {

namespace {

void check(zrt_status_t rc) {
  if (rc != ZRT_SUCCESS) throw StatusError(rc, zrt_last_error_message());
}

[[noreturn]] void invalid(const std::string &what) {
  throw StatusError(ZRT_ERR_INVALID_ARGUMENT, what);
}

std::string tensor_shape_text(const zrt_tensor_t *t) {
  std::vector<int64_t> dims(t->shape,
                            t->shape + std::max(0, std::min(t->ndim, ZRT_TENSOR_MAX_DIMS)));
  return fmt::format("({})", fmt::join(dims, ", "));
}

std::string batch_shape_text(const Shape &per_sample) {
  return per_sample.empty() ? "(batch)" : fmt::format("(batch, {})", fmt::join(per_sample, ", "));
}

int64_t numel(const Shape &s, int64_t batch) {
  int64_t n = batch;
  for (int64_t d : s)
    n *= d;
  return n;
}

namespace model_kernels {
void scale(Kokkos::View<float *, MemSpace> v, int64_t n, float factor) {
  Kokkos::parallel_for(
      "scale_output_grad", RangePolicy(0, n), KOKKOS_LAMBDA(int64_t i) { v(i) *= factor; });
}
}  // namespace model_kernels

}  // namespace

Model::Model(zrt_context_h context, ModelConfig config)
    : config_(std::move(config)), context_(context), last_loss_(std::nan("")) {
  check(zrt_context_comm(context_, &comm_));
  check(zrt_comm_rank(comm_, &rank_));
  check(zrt_comm_size(comm_, &ranks_));

  // The layers, each over the previous one's output shape.
  std::vector<std::pair<std::string, std::unique_ptr<Layer>>> layers;
  Shape shape = config_.input;
  for (size_t i = 0; i < config_.layers.size(); ++i) {
    const std::string where = fmt::format("model config {}: layers[{}]", config_.source, i);
    auto layer = make_layer(config_.layers[i], shape, where);
    if (layer->reads_tokens() && i > 0)
      throw std::invalid_argument(where + ": an embedding must be the model's first layer");
    shape = layer->out_shape();
    layers.emplace_back(std::to_string(i), std::move(layer));
  }
  net_ = std::make_unique<Sequence>(config_.input, std::move(layers), "model");
  if (config_.loss == LossKind::cross_entropy && net_->out_shape().back() < 2)
    throw std::invalid_argument(fmt::format(
        "model config {}: cross_entropy needs at least 2 classes in the output's last dimension, "
        "but the output is {}",
        config_.source, shape_text(net_->out_shape())));
  net_->declare(layout_, "");
  if (config_.decay_all)
    for (TensorSpec &t : layout_)
      t.weight_decay = true;
  if (layout_.empty())
    throw std::invalid_argument(
        fmt::format("model config {}: the model has no parameters to train", config_.source));
  for (const TensorSpec &t : layout_)
    parameters_ += t.numel();

  // The engine: every setting from the configuration (file, then ZRT_* environment).
  EngineOptions opt;
  opt.from_config = ZRT_ENGINE_PARAM_FIELD_ALL;
  if (!config_.engine_settings.empty()) opt.settings = config_.engine_settings.dump();
  nlohmann::json resolved;
  state_ = make_engine_model_state(context_, layout_, opt, &resolved);
  base_lr_ = resolved.value("lr", 1e-3);
  stage_ = resolved.value("stage", -1);
  last_lr_ = base_lr_;
  if (!config_.schedule.type.empty()) {
    if (resolved.contains("scheduler") && resolved["scheduler"].value("type", "none") != "none")
      throw std::invalid_argument(
          fmt::format("model config {}: lr_scheduler and the engine's scheduler both set the rate",
                      config_.source));
    config_.schedule.base_lr = base_lr_;
    last_lr_ = config_.schedule.lr(0);
  }

  // Initial values: drawn in layout order from the seed, the same on every rank.
  std::mt19937_64 rng(config_.seed);
  std::vector<std::vector<float>> values;
  net_->initialize(rng, values);
  if (values.size() != layout_.size())
    throw std::logic_error("a layer initialized other tensors than it declared");
  for (size_t id = 0; id < layout_.size(); ++id)
    state_->store().set(static_cast<int>(id), values[id].data());
  if (config_.verbose && rank_ == 0) std::printf("%s", describe().c_str());
}

Model::~Model() = default;

void Model::check_input(const zrt_tensor_t *t, const char *what) {
  if (t == nullptr) invalid(fmt::format("{} is NULL", what));
  if (t->dtype != ZRT_DTYPE_FP32)
    invalid(fmt::format("{}: dtype {} is not ZRT_DTYPE_FP32", what, int(t->dtype)));
  if (t->ndim < 1 || t->ndim > ZRT_TENSOR_MAX_DIMS)
    invalid(fmt::format("{}: ndim {} is outside 1..{}", what, t->ndim, ZRT_TENSOR_MAX_DIMS));
  if (t->data == nullptr) invalid(fmt::format("{}: data is NULL", what));
}

void Model::check_shape(const zrt_tensor_t *t, const Shape &per_sample, int64_t batch,
                        const char *what) const {
  const std::string want = batch_shape_text(per_sample);
  if (t->ndim != static_cast<int>(per_sample.size()) + 1)
    invalid(
        fmt::format("{} has shape {} ({} dimensions), but the model takes {}: {} dimensions "
                    "(row-major; from Fortran, the batch is the last dimension)",
                    what, tensor_shape_text(t), t->ndim, want, per_sample.size() + 1));
  if (t->shape[0] != batch)
    invalid(fmt::format("{} has shape {}: its batch (dimension 0) is {}, expected {}{}", what,
                        tensor_shape_text(t), t->shape[0], batch, batch > 0 ? "" : ", at least 1"));
  for (size_t d = 0; d < per_sample.size(); ++d)
    if (t->shape[d + 1] != per_sample[d])
      invalid(
          fmt::format("{} has shape {}, but the model takes {}: dimension {} is {}, expected {}",
                      what, tensor_shape_text(t), want, d + 1, t->shape[d + 1], per_sample[d]));
}

void Model::load_tokens(const float *ids, int64_t n, int64_t vocab, const char *what,
                        Kokkos::View<int *, MemSpace> &dst) {
  std::vector<float> host(static_cast<size_t>(n));
  copy_to_host(host.data(), ids, n);
  if (dst.extent(0) != static_cast<size_t>(n))
    dst = Kokkos::View<int *, MemSpace>("zrt_model_ids", n);
  auto mirror = Kokkos::create_mirror_view(dst);
  for (int64_t i = 0; i < n; ++i) {
    const float v = host[static_cast<size_t>(i)];
    if (!(v >= 0 && v < static_cast<float>(vocab)) || v != std::floor(v))
      invalid(
          fmt::format("{}: element {} is {}, not a whole number in [0, {})", what, i, v, vocab));
    mirror(i) = static_cast<int>(v);
  }
  Kokkos::deep_copy(dst, mirror);
}

void Model::prepare_forward(const zrt_tensor_t *input, const zrt_tensor_t *output, bool train) {
  if (forwarded_ && !train)
    throw StatusError(ZRT_ERR_INVALID_STATE,
                      "between zrt_model_forward_train and zrt_model_backward_step: call "
                      "zrt_model_backward_step first");
  check_input(input, "input");
  if (input->shape[0] < 1)
    invalid(fmt::format("input has shape {}: an empty batch", tensor_shape_text(input)));
  check_shape(input, net_->in_shape(), input->shape[0], "input");
  if (output != nullptr) {
    check_input(output, "output");
    check_shape(output, net_->out_shape(), input->shape[0], "output");
  }
  batch_ = input->shape[0];
  const int64_t n = numel(net_->in_shape(), batch_);
  const float *src = static_cast<const float *>(input->data);
  if (net_->reads_tokens())
    load_tokens(src, n, dynamic_cast<const Embedding &>(net_->front()).vocab(), "input (token ids)",
                tokens_);
  copy_in(input_.get(n), src, n);
}

void Model::prepare_train(const zrt_tensor_t *input, const zrt_tensor_t *target) {
  if (config_.loss == LossKind::external)
    throw StatusError(ZRT_ERR_INVALID_STATE,
                      "the model's loss is \"external\": train with zrt_model_forward_train and "
                      "zrt_model_backward_step");
  forwarded_ = false;  // a forward_train without its backward is dropped
  prepare_forward(input, nullptr, true);
  check_input(target, "target");
  const Shape &out = net_->out_shape();
  if (config_.loss == LossKind::cross_entropy) {
    const Shape classes(out.begin(), out.end() - 1);
    check_shape(target, classes, batch_, "target (class indices)");
    load_tokens(static_cast<const float *>(target->data), numel(classes, batch_), out.back(),
                "target (class indices)", classes_);
  } else {
    check_shape(target, out, batch_, "target");
    const int64_t n = numel(out, batch_);
    copy_in(target_.get(n), static_cast<const float *>(target->data), n);
  }
}

void Model::prepare_backward(const zrt_tensor_t *output_grad) {
  if (!forwarded_)
    throw StatusError(ZRT_ERR_INVALID_STATE,
                      "zrt_model_backward_step without zrt_model_forward_train before it");
  check_input(output_grad, "output_grad");
  check_shape(output_grad, net_->out_shape(), batch_, "output_grad");
  const int64_t n = numel(net_->out_shape(), batch_);
  copy_in(dout_.get(n), static_cast<const float *>(output_grad->data), n);
  const double scale = state_->loss_scale();
  if (scale != 1.0) model_kernels::scale(dout_.view, n, static_cast<float>(scale));
}

void Model::forward_pass(bool train) {
  const Shape &in = net_->in_shape(), &out = net_->out_shape();
  Pass pass{state_->store(), batch_, train, micro_steps_, rank_, config_.seed, tokens_};
  const int64_t in_rows = rows_of(in, batch_), out_rows = rows_of(out, batch_);
  net_->forward(pass, CMat<float>(input_.view.data(), in_rows, in.back()),
                Mat<float>(output_.get(out_rows * out.back()), out_rows, out.back()));
}

bool Model::step_after_backward() {
  const Shape &in = net_->in_shape(), &out = net_->out_shape();
  Pass pass{state_->store(), batch_, true, micro_steps_, rank_, config_.seed, tokens_};
  const int64_t in_rows = rows_of(in, batch_), out_rows = rows_of(out, batch_);
  std::optional<double> lr;
  if (!config_.schedule.type.empty()) lr = config_.schedule.lr(optimizer_steps_);
  // The rate before backward: ZeRO-Offload's CPU step starts during it.
  state_->begin_step(lr);
  net_->backward(pass, CMat<float>(input_.view.data(), in_rows, in.back()),
                 CMat<float>(output_.view.data(), out_rows, out.back()),
                 CMat<float>(dout_.view.data(), out_rows, out.back()), Mat<float>());
  const StepReport r = state_->step(lr);
  ++micro_steps_;
  if (r.applied) {
    optimizer_steps_ = r.optimizer_steps;
    last_lr_ = r.lr;
  }
  return r.applied;
}

double Model::run_train() {
  forward_pass(true);
  const Shape &out = net_->out_shape();
  const int64_t rows = rows_of(out, batch_);
  Mat<float> dy(dout_.get(rows * out.back()), rows, out.back());
  const double local = loss_forward_backward(
      config_.loss, config_.loss_sum, CMat<float>(output_.view.data(), rows, out.back()),
      CMat<float>(target_.view.data(), config_.loss == LossKind::cross_entropy ? 0 : rows,
                  config_.loss == LossKind::cross_entropy ? 0 : out.back()),
      classes_, dy, state_->loss_scale());
  const bool applied = step_after_backward();
  // The mean over ranks of each rank's loss, as the engine averages the gradients.
  double sum = local;
  check(zrt_comm_all_reduce(comm_, &local, &sum, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM));
  last_loss_ = sum / ranks_;
  if (config_.report_frequency > 0 && applied && rank_ == 0 &&
      optimizer_steps_ % config_.report_frequency == 0)
    std::printf("zerort model: step %lld, loss %.6g, lr %.6g\n",
                static_cast<long long>(optimizer_steps_), last_loss_, last_lr_);
  return last_loss_;
}

void Model::run_forward(zrt_tensor_t *output, bool train) {
  forward_pass(train);
  copy_out(static_cast<float *>(output->data), output_.view.data(),
           numel(net_->out_shape(), batch_));
  forwarded_ = train;
}

void Model::run_backward() {
  forwarded_ = false;
  step_after_backward();
}

std::string Model::checkpoint_metadata() const {
  nlohmann::json layers = nlohmann::json::array();
  for (const TensorSpec &t : layout_)
    layers.push_back({{"name", t.name}, {"shape", t.shape}});
  return nlohmann::json{{"zrt_model",
                         {{"input", config_.input},
                          {"layers", config_.layers},
                          {"tensors", layers},
                          {"micro_steps", micro_steps_}}}}
      .dump();
}

void Model::save(const std::string &path) {
  state_->save(path, checkpoint_metadata());
}

void Model::load(const std::string &path) {
  // The checkpoint's own description first: a checkpoint of other layers changes nothing.
  size_t length = 0;
  check(zrt_checkpoint_describe(path.c_str(), nullptr, 0, &length));
  std::string text(length + 1, '\0');
  check(zrt_checkpoint_describe(path.c_str(), text.data(), text.size(), &length));
  text.resize(length);
  const nlohmann::json about = nlohmann::json::parse(text, nullptr, false);
  nlohmann::json meta;
  if (about.is_object() && about.contains("metadata")) {
    const nlohmann::json &m = about["metadata"];
    meta = m.is_string() ? nlohmann::json::parse(m.get<std::string>(), nullptr, false) : m;
  }
  if (!meta.is_object() || !meta.contains("zrt_model"))
    throw StatusError(
        ZRT_ERR_INVALID_ARGUMENT,
        fmt::format("{}: not a checkpoint of zrt_model_save (no zrt_model metadata)", path));
  const nlohmann::json &saved = meta["zrt_model"]["tensors"];
  bool same = saved.size() == layout_.size();
  for (size_t i = 0; same && i < layout_.size(); ++i)
    same = saved[i].value("name", std::string()) == layout_[i].name &&
           saved[i].value("shape", std::vector<int64_t>{}) == layout_[i].shape;
  if (!same)
    throw StatusError(
        ZRT_ERR_INVALID_ARGUMENT,
        fmt::format("{}: a checkpoint of other layers (its tensors {} against this model's {}); "
                    "nothing was loaded",
                    path, saved.size(), layout_.size()));
  state_->load(path);
  optimizer_steps_ = about.value("step", int64_t{0});
  micro_steps_ = meta["zrt_model"].value("micro_steps", uint64_t{0});
  if (!config_.schedule.type.empty()) last_lr_ = config_.schedule.lr(optimizer_steps_);
}

std::vector<std::vector<float>> Model::gather_all() {
  std::vector<std::vector<float>> values(layout_.size());
  for (size_t id = 0; id < layout_.size(); ++id) {
    values[id].resize(static_cast<size_t>(layout_[id].numel()));
    state_->store().get(static_cast<int>(id), values[id].data());
  }
  return values;
}

zrt_model_info_t Model::info() const {
  zrt_model_info_t i{};
  i.parameters = parameters_;
  i.input_ndim = static_cast<int>(net_->in_shape().size());
  for (size_t d = 0; d < net_->in_shape().size(); ++d)
    i.input_shape[d] = net_->in_shape()[d];
  i.output_ndim = static_cast<int>(net_->out_shape().size());
  for (size_t d = 0; d < net_->out_shape().size(); ++d)
    i.output_shape[d] = net_->out_shape()[d];
  i.optimizer_steps = optimizer_steps_;
  i.stage = stage_;
  i.last_loss = last_loss_;
  i.last_lr = last_lr_;
  return i;
}

std::string Model::describe() const {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("model of {} parameters in {} tensors, input {}, output {}, loss {}",
                              parameters_, layout_.size(), batch_shape_text(net_->in_shape()),
                              batch_shape_text(net_->out_shape()),
                              config_.loss == LossKind::mse             ? "mse"
                              : config_.loss == LossKind::l1            ? "l1"
                              : config_.loss == LossKind::cross_entropy ? "cross_entropy"
                                                                        : "external"));
  net_->describe_lines(lines, "  ");
  lines.push_back(state_->describe());
  std::string text;
  for (const std::string &l : lines)
    text += l + "\n";
  return text;
}

}  // namespace zrt::nn::model
