#include "bert_trainer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <optional>

#include "data/example_file.hpp"
#include "data/pretraining_examples.hpp"
#include "model/bert_model.hpp"
#include "tokenizer/vocabulary.hpp"
#include "training/checkpoint_info.hpp"
#include "training/memory_check.hpp"
#include "training/rank_sum.hpp"

namespace bert {
namespace {

// The fields of a BERT config that fix the parameters' names and shapes.
const std::vector<std::string> kShapeKeys = {
    "num_hidden_layers",       "hidden_size",     "num_attention_heads", "intermediate_size",
    "max_position_embeddings", "type_vocab_size", "vocab_size"};

// Rows [first, first + B) of the run's samples, as the model's host batch.
void fill_batch(const PretrainingExamples &examples, uint64_t first, int B, HostBatch &h) {
  const int T = examples.seq();
  h.B = B;
  h.T = T;
  h.input_ids.resize(size_t(B) * T);
  h.segment_ids.resize(h.input_ids.size());
  h.mlm_labels.resize(h.input_ids.size());
  h.nsp_labels.resize(size_t(B));
  h.lengths.resize(size_t(B));
  std::vector<int32_t> mask(h.input_ids.size());
  static_assert(sizeof(int) == sizeof(int32_t));
  PretrainingBatch out;
  out.input_ids = reinterpret_cast<int32_t *>(h.input_ids.data());
  out.segment_ids = reinterpret_cast<int32_t *>(h.segment_ids.data());
  out.attention_mask = mask.data();
  out.mlm_labels = reinterpret_cast<int32_t *>(h.mlm_labels.data());
  out.nsp_labels = reinterpret_cast<int32_t *>(h.nsp_labels.data());
  examples.fill_samples(first, size_t(B), out);
  for (int b = 0; b < B; ++b) {
    int len = 0;
    for (int t = 0; t < T; ++t)
      len += mask[size_t(b) * T + t];
    h.lengths[size_t(b)] = len;
  }
}

int64_t masked_count(const HostBatch &h) {
  int64_t n = 0;
  for (int v : h.mlm_labels)
    n += v >= 0;
  return n;
}

}  // namespace

struct BertTrainer::Impl : training::TrainerHooks {
  Impl(const BertTrainOptions &opt, training::ModelState &state, const World &world)
      : opt_(opt),
        state_(state),
        world_(world),
        lead_(world.rank == 0 && !opt.quiet),
        vocab_(Vocabulary::load(opt.vocab_path)),
        model_(opt.config, state.store()) {
    if (vocab_.size() != opt.config.vocab_size)
      throw std::invalid_argument(fmt::format(
          "the vocabulary {} has {} tokens but model config {} has vocab_size {}",
          opt.vocab_path.string(), vocab_.size(), opt.config.name, opt.config.vocab_size));
    if (opt.seq > opt.config.max_positions)
      throw std::invalid_argument(
          fmt::format("--seq {} exceeds the model's {} positions (max_position_embeddings)",
                      opt.seq, opt.config.max_positions));
    PretrainingOptions po;
    po.seq = opt.seq;
    po.mask_prob = opt.mask_prob;
    po.max_predictions = opt.max_predictions;
    po.seed = opt.data_seed;
    train_file_.emplace(ExampleFile::open(opt.data_dir / "train.bin", vocab_));
    train_.emplace(*train_file_, vocab_, po);
    if (std::filesystem::exists(opt.data_dir / "val.bin")) {
      val_file_.emplace(ExampleFile::open(opt.data_dir / "val.bin", vocab_));
      val_.emplace(*val_file_, vocab_, po);
    }
    accum_ = std::max(1, opt.optimizer.accumulation_steps);
    global_batch_ = size_t(opt.batch) * size_t(accum_) * size_t(world.size);
    // Before they are allocated (and zeroed): in host memory where the model computes there.
    if (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible)
      training::check_host_memory(
          world.context,
          {{fmt::format("activations for {} x {} tokens", opt.batch, opt.seq),
            BertActivations<float>::planned_bytes(opt.config, opt.batch, opt.seq,
                                                  opt.batch * train_->max_predictions())}},
          "a smaller --batch or --seq");
    else
      training::check_device_memory(
          {{fmt::format("activations for {} x {} tokens", opt.batch, opt.seq),
            BertActivations<float>::planned_bytes(opt.config, opt.batch, opt.seq,
                                                  opt.batch * train_->max_predictions())}},
          "a smaller --batch or --seq");
    acts_ = std::make_unique<BertActivations<float>>(opt.config, opt.batch, opt.seq,
                                                     opt.batch * train_->max_predictions());
    device_ = std::make_unique<DeviceBatch>(opt.batch, opt.seq);
    host_.resize(size_t(accum_));
    loop_.emplace(
        opt,
        training::TrainerIdentity{
            "zrt-bert", "bert", opt.config.name,
            training::CheckpointOwner{"zrt-bert", "BERT", opt.config.to_json(), kShapeKeys},
            weights::ModelKind::bert},
        state, world);
  }

  BertTrainResult run() {
    const training::RunSummary s = loop_->run(*this);
    BertTrainResult result;
    result.steps = std::move(steps_);
    result.evals = std::move(evals_);
    result.first_step = s.first_step;
    result.steps_done = s.steps_done;
    result.stopped = s.stopped;
    result.stop_signal = s.stop_signal;
    result.memory = s.memory;
    result.stage0_bytes = s.stage0_bytes;
    // A --dump-logits run trained nothing and reports no memory.
    if (opt_.dump_logits.empty()) result.activation_bytes = acts_->bytes();
    result.checkpoint = s.checkpoint;
    result.plots = s.plots;
    return result;
  }

  std::string resumed(const training::CheckpointInfo &r) override {
    const nlohmann::json &m = r.metadata;
    if (m.value("global_batch", int64_t(global_batch_)) == int64_t(global_batch_) &&
        m.value("seq", opt_.seq) == opt_.seq &&
        m.value("data_seed", opt_.data_seed) == opt_.data_seed &&
        m.value("steps", opt_.steps) == opt_.steps)
      return "";
    return fmt::format(
        "note: it was saved by a run of global batch {} x {} tokens (data seed {}) planning "
        "{} steps; this one continues at step {} with its own batches and schedule",
        m.value("global_batch", 0), m.value("seq", 0), m.value("data_seed", 0), m.value("steps", 0),
        r.step);
  }

  nlohmann::json checkpoint_metadata(int64_t step) override {
    return {{"program", "zrt-bert"},
            {"model", opt_.config.to_json()},
            {"step", step},
            {"micro_batches", step * accum_},
            {"global_batch", global_batch_},
            {"batch", opt_.batch},
            {"seq", opt_.seq},
            {"ranks", world_.size},
            {"accumulation_steps", accum_},
            {"steps", opt_.steps},
            {"seed", opt_.seed},
            {"data_seed", opt_.data_seed},
            {"mask_prob", opt_.mask_prob},
            {"max_predictions", train_->max_predictions()},
            {"data", opt_.data_dir.string()}};
  }

  void init_parameters() override { model_.init_parameters(opt_.seed); }

  double tokens_per_step() const override { return double(global_batch_) * opt_.seq; }

  int64_t activation_bytes() const override { return acts_->bytes(); }

  // One optimizer step over the global batch of step @p step. Collective.
  training::StepOutcome train_step(int64_t step, std::optional<double> lr) override {
    int64_t masked = 0;
    for (int k = 0; k < accum_; ++k) {
      const uint64_t first = PretrainingExamples::first_sample(
          uint64_t(step), global_batch_, world_.size, world_.rank, size_t(opt_.batch), size_t(k));
      fill_batch(*train_, first, opt_.batch, host_[size_t(k)]);
      masked += masked_count(host_[size_t(k)]);
    }
    // The MLM loss is a mean over every masked position of the global batch: its count
    // first, so each position's gradient has its true weight.
    std::vector<double> count = {double(masked)};
    training::sum_over_ranks(world_.comm, world_.size, count);
    const double scale = state_.loss_scale();
    // The model states divide the summed gradients by the micro-steps and the ranks.
    const float dmlm = static_cast<float>(scale * accum_ * world_.size / count[0]);
    const float dnsp = static_cast<float>(scale / opt_.batch);
    double mlm_sum = 0, nsp_sum = 0, mlm_correct = 0, nsp_correct = 0;
    training::StepOutcome out;
    training::CommFigures comm;
    // The rate first: ZeRO-Offload's CPU step starts during the last backward.
    state_.begin_step(lr);
    for (int k = 0; k < accum_; ++k) {
      device_->set(host_[size_t(k)], opt_.config.vocab_size, opt_.config.type_vocab_size);
      const BertLosses l = model_.forward(*acts_, device_->view());
      model_.backward(*acts_, device_->view(), dmlm, dnsp);
      out.report = state_.step(lr);
      comm += out.report.comm;
      mlm_sum += l.mlm * double(l.mlm_count);
      nsp_sum += l.nsp * double(l.nsp_count);
      mlm_correct += double(l.mlm_correct);
      nsp_correct += double(l.nsp_correct);
    }
    out.report.comm = comm;  // the whole step's
    std::vector<double> shared = {mlm_sum, nsp_sum, mlm_correct, nsp_correct};
    out.stop_requested = training::sum_with_stop_flag(world_, shared);
    BertStepLosses s;
    s.mlm = shared[0] / count[0];
    s.nsp = shared[1] / double(global_batch_);
    s.loss = s.mlm + s.nsp;
    s.mlm_accuracy = shared[2] / count[0];
    s.nsp_accuracy = shared[3] / double(global_batch_);
    steps_.push_back(s);
    out.loss = s.loss;
    out.extra = {{"mlm_loss", s.mlm},
                 {"nsp_loss", s.nsp},
                 {"mlm_accuracy", s.mlm_accuracy},
                 {"nsp_accuracy", s.nsp_accuracy}};
    out.loss_detail =
        fmt::format("mlm {:.4f}, nsp {:.4f}, mlm acc {:.3f}", s.mlm, s.nsp, s.mlm_accuracy);
    return out;
  }

  void add_end_record(nlohmann::json &end) override {
    end["final_mlm_accuracy"] =
        steps_.empty() ? nlohmann::json() : nlohmann::json(steps_.back().mlm_accuracy);
  }

  // --dump-logits: the heads' outputs for this rank's first validation batch, to compare
  // the model elsewhere (the ONNX export in ONNX Runtime). Every real token is predicted
  // (its own label), so the MLM head covers all of them. PATH gets float32: the MLM
  // probabilities [P, vocab] at the positions PATH.json lists (b * seq + t), the NSP
  // probabilities [batch, 2], the pooled output [batch, hidden]; PATH.json also the inputs.
  // Collective (the forward pass gathers parameters at stage 3); rank 0 writes.
  void dump_logits() override {
    if (!val_)
      throw std::invalid_argument("--dump-logits: no validation data to take a batch from");
    const int B = opt_.batch, T = opt_.seq;
    HostBatch &h = host_[0];
    fill_batch(*val_,
               PretrainingExamples::first_sample(0, size_t(B) * size_t(world_.size), world_.size,
                                                 world_.rank, size_t(B), 0),
               B, h);
    std::vector<int> rows, mask(size_t(B) * T, 0);
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < h.lengths[size_t(b)]; ++t) {
        const size_t i = size_t(b) * T + t;
        h.mlm_labels[i] = h.input_ids[i];
        mask[i] = 1;
        rows.push_back(int(i));
      }
    BertActivations<float> acts(opt_.config, B, T, B * T);
    device_->set(h, opt_.config.vocab_size, opt_.config.type_vocab_size);
    model_.forward(acts, device_->view());
    if (!lead_) return;
    const size_t P = rows.size(), V = size_t(opt_.config.vocab_size),
                 H = size_t(opt_.config.hidden);
    std::vector<float> host(P * V + size_t(B) * 2 + size_t(B) * H);
    auto copy = [&](const float *from, size_t n, size_t at) {
      Kokkos::deep_copy(
          Kokkos::View<float *, Kokkos::HostSpace, zrt::nn::Unmanaged>(host.data() + at, n),
          Kokkos::View<const float *, zrt::nn::MemSpace, zrt::nn::Unmanaged>(from, n));
    };
    copy(acts.mlm_logits, P * V, 0);
    copy(acts.nsp_logits, size_t(B) * 2, P * V);
    copy(acts.pooled, size_t(B) * H, P * V + size_t(B) * 2);
    const std::string path = opt_.dump_logits.string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(host.data()),
              static_cast<std::streamsize>(host.size() * sizeof(float)));
    std::ofstream meta(path + ".json", std::ios::trunc);
    meta << nlohmann::json{{"model", "bert"},
                           {"batch", B},
                           {"seq", T},
                           {"vocab", V},
                           {"hidden", H},
                           {"dtype", "float32"},
                           {"layout", {"mlm_probabilities", "nsp_probabilities", "pooled_output"}},
                           {"mlm_rows", rows},
                           {"input_ids", h.input_ids},
                           {"token_type_ids", h.segment_ids},
                           {"attention_mask", mask}}
                .dump()
         << '\n';
    if (!out || !meta)
      throw std::runtime_error(fmt::format("--dump-logits {}: cannot write", path));
    fmt::print(
        "MLM and NSP probabilities and the pooled output of one validation batch ({} x {}, "
        "{} tokens) in {}, the inputs in {}.json\n",
        B, T, P, path, path);
  }

  // The losses on the first eval_batches global batches of val.bin (the same examples and
  // masks every time). Collective; nothing without a val.bin.
  std::optional<double> evaluate(int64_t step) override {
    if (!val_) return std::nullopt;
    const size_t eval_global = size_t(opt_.batch) * size_t(world_.size);
    double mlm_sum = 0, nsp_sum = 0, mlm_correct = 0, nsp_correct = 0, masked = 0;
    for (int i = 0; i < opt_.eval_batches; ++i) {
      const uint64_t first = PretrainingExamples::first_sample(
          uint64_t(i), eval_global, world_.size, world_.rank, size_t(opt_.batch), 0);
      fill_batch(*val_, first, opt_.batch, host_[0]);
      device_->set(host_[0], opt_.config.vocab_size, opt_.config.type_vocab_size);
      const BertLosses l = model_.forward(*acts_, device_->view());
      mlm_sum += l.mlm * double(l.mlm_count);
      nsp_sum += l.nsp * double(l.nsp_count);
      mlm_correct += double(l.mlm_correct);
      nsp_correct += double(l.nsp_correct);
      masked += double(l.mlm_count);
    }
    std::vector<double> sum = {mlm_sum, nsp_sum, mlm_correct, nsp_correct, masked};
    training::sum_over_ranks(world_.comm, world_.size, sum);
    const double sequences = double(eval_global) * opt_.eval_batches;
    BertStepLosses e;
    e.mlm = sum[0] / sum[4];
    e.nsp = sum[1] / sequences;
    e.loss = e.mlm + e.nsp;
    e.mlm_accuracy = sum[2] / sum[4];
    e.nsp_accuracy = sum[3] / sequences;
    training::EvalMetrics em;
    em.step = step;
    em.val_loss = e.loss;
    em.extra = {{"val_mlm_loss", e.mlm},
                {"val_nsp_loss", e.nsp},
                {"val_mlm_accuracy", e.mlm_accuracy},
                {"val_nsp_accuracy", e.nsp_accuracy}};
    loop_->log().eval(em);
    if (lead_)
      fmt::print(
          "step {}: val loss {:.4f} (mlm {:.4f}, nsp {:.4f}, mlm acc {:.3f}, nsp acc "
          "{:.3f})\n",
          step, e.loss, e.mlm, e.nsp, e.mlm_accuracy, e.nsp_accuracy);
    evals_.push_back(e);
    return e.loss;
  }

  nlohmann::json run_record() override {
    return {{"model", opt_.config.to_json()},
            {"data", opt_.data_dir.string()},
            {"train_examples", train_->size()},
            {"val_examples", val_ ? val_->size() : 0},
            {"ranks", world_.size},
            {"batch", opt_.batch},
            {"seq", opt_.seq},
            {"accumulation_steps", accum_},
            {"global_batch", global_batch_},
            {"steps", opt_.steps},
            {"lr", loop_->lr().max_lr},
            {"max_predictions", train_->max_predictions()}};
  }

  void print_header() override {
    const BertConfig &c = opt_.config;
    const training::LrSchedule &lr = loop_->lr();
    fmt::print(
        "model {}: {} layers, hidden {}, {} heads, intermediate {}, vocab {}, {} positions: "
        "{:.2f}M parameters\n",
        c.name, c.num_layers, c.hidden, c.num_heads, c.intermediate, c.vocab_size, c.max_positions,
        c.num_parameters() / 1e6);
    if (!c.not_used.empty())
      fmt::print("note: the config's {} are not used: zrt-bert trains without dropout\n",
                 fmt::join(c.not_used, ", "));
    fmt::print(
        "data {}: {} training examples of {} tokens ({} documents), {} held out; {:.2f} "
        "epoch(s) planned\n",
        opt_.data_dir.string(), train_->size(), opt_.seq, train_file_->documents(),
        val_ ? val_->size() : 0,
        double(opt_.steps) * double(global_batch_) / double(train_->size()));
    fmt::print(
        "batch {} x {} tokens x {} micro-step(s) x {} rank(s) = {} sequences per step, up to {} "
        "masked each; lr {}\n",
        opt_.batch, opt_.seq, accum_, world_.size, global_batch_, train_->max_predictions(),
        lr.engine.empty()
            ? fmt::format("{:.1e} (warmup {}, {} decay to {:.1e})", lr.max_lr, lr.warmup_steps,
                          lr.decay == training::LrDecay::polynomial ? "linear" : "cosine",
                          lr.min_lr)
            : lr.engine);
  }

  const BertTrainOptions &opt_;
  training::ModelState &state_;
  const World &world_;
  const bool lead_;
  Vocabulary vocab_;
  BertModel<float> model_;
  std::optional<ExampleFile> train_file_, val_file_;
  std::optional<PretrainingExamples> train_, val_;
  int accum_ = 1;
  size_t global_batch_ = 0;
  std::unique_ptr<BertActivations<float>> acts_;
  std::unique_ptr<DeviceBatch> device_;
  std::vector<HostBatch> host_;
  std::optional<training::TrainingLoop> loop_;
  std::vector<BertStepLosses> steps_, evals_;
};

BertTrainer::BertTrainer(const BertTrainOptions &options, training::ModelState &state,
                         const World &world)
    : impl_(std::make_unique<Impl>(options, state, world)) {}

BertTrainer::~BertTrainer() = default;

BertTrainResult BertTrainer::run() {
  return impl_->run();
}

}  // namespace bert
