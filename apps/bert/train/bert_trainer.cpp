#include "bert_trainer.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>

#include "model/bert_model.hpp"
#include "text/example_file.hpp"
#include "text/pretraining_examples.hpp"
#include "text/vocabulary.hpp"
#include "training/checkpoint_info.hpp"
#include "training/divergence.hpp"
#include "training/init_from.hpp"
#include "training/job_metadata.hpp"
#include "training/kokkos_device.hpp"
#include "training/memory_check.hpp"
#include "training/rank_sum.hpp"
#include "training/signals.hpp"

namespace bert {
namespace {

using Clock = std::chrono::steady_clock;
using training::format_bytes;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Sums @p values over the ranks, in place.
void sum_over_ranks(const World &world, std::vector<double> &values) {
  training::sum_over_ranks(world.comm, world.size, values);
}

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

struct BertTrainer::Impl {
  Impl(const BertTrainOptions &opt, training::ModelState &state, const World &world)
      : opt_(opt),
        state_(state),
        world_(world),
        lead_(world.rank == 0 && !opt.quiet),
        vocab_(Vocabulary::load(opt.vocab_path)),
        model_(opt.config, state.store()),
        log_(world.rank == 0 ? opt.json_metrics : "") {
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
    lr_ = opt.lr;
    lr_.total_steps = opt.steps;
    lr_.validate();
    if (!opt.save_path.empty()) training::check_save_folder(opt.save_path);
    if (!opt.resume_path.empty())
      resume_.emplace(training::read_checkpoint_info(
          opt.resume_path,
          training::CheckpointOwner{"zrt-bert", "BERT", opt.config.to_json(), kShapeKeys}));
    // A requeued job's metrics continue its earlier runs' (rank 0 writes them).
    if (resume_) log_.resumed_at(resume_->step);
    init_ = training::open_init_from(opt.init_from, weights::ModelKind::bert, state.store());
  }

  int64_t resume() {
    const training::CheckpointInfo &r = *resume_;
    state_.load(r.path.string());
    const nlohmann::json &m = r.metadata;
    if (lead_) {
      fmt::print("resumed from {} at step {}\n", r.path.string(), r.step);
      if (m.value("global_batch", int64_t(global_batch_)) != int64_t(global_batch_) ||
          m.value("seq", opt_.seq) != opt_.seq ||
          m.value("data_seed", opt_.data_seed) != opt_.data_seed ||
          m.value("steps", opt_.steps) != opt_.steps)
        fmt::print(
            "note: it was saved by a run of global batch {} x {} tokens (data seed {}) planning "
            "{} steps; this one continues at step {} with its own batches and schedule\n",
            m.value("global_batch", 0), m.value("seq", 0), m.value("data_seed", 0),
            m.value("steps", 0), r.step);
    }
    return r.step;
  }

  std::filesystem::path save(int64_t step, bool background = false) {
    nlohmann::json meta = {{"program", "zrt-bert"},
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
    meta.update(training::job_metadata());
    const auto t0 = Clock::now();
    state_.save(opt_.save_path.string(), meta.dump(), background);
    const std::filesystem::path path = training::checkpoint_path(opt_.save_path, step);
    if (lead_)
      fmt::print("checkpoint: {} (step {}, {:.1f} s{})\n", path.string(), step, seconds_since(t0),
                 background ? ", writing in the background" : "");
    std::fflush(stdout);
    return path;
  }

  // One optimizer step over the global batch of step @p step. Collective.
  BertStepLosses train_step(int64_t step, std::optional<double> lr, training::StepReport &report,
                            bool &stop_requested) {
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
    sum_over_ranks(world_, count);
    const double scale = state_.loss_scale();
    // The model states divide the summed gradients by the micro-steps and the ranks.
    const float dmlm = static_cast<float>(scale * accum_ * world_.size / count[0]);
    const float dnsp = static_cast<float>(scale / opt_.batch);
    double mlm_sum = 0, nsp_sum = 0, mlm_correct = 0, nsp_correct = 0;
    training::CommFigures comm;
    for (int k = 0; k < accum_; ++k) {
      device_->set(host_[size_t(k)], opt_.config.vocab_size, opt_.config.type_vocab_size);
      const BertLosses l = model_.forward(*acts_, device_->view());
      model_.backward(*acts_, device_->view(), dmlm, dnsp);
      report = state_.step(lr);
      comm += report.comm;
      mlm_sum += l.mlm * double(l.mlm_count);
      nsp_sum += l.nsp * double(l.nsp_count);
      mlm_correct += double(l.mlm_correct);
      nsp_correct += double(l.nsp_correct);
    }
    report.comm = comm;  // the whole step's
    std::vector<double> shared = {mlm_sum, nsp_sum, mlm_correct, nsp_correct,
                                  double(training::stop_signal())};
    sum_over_ranks(world_, shared);
    stop_requested = shared[4] > 0;
    BertStepLosses s;
    s.mlm = shared[0] / count[0];
    s.nsp = shared[1] / double(global_batch_);
    s.loss = s.mlm + s.nsp;
    s.mlm_accuracy = shared[2] / count[0];
    s.nsp_accuracy = shared[3] / double(global_batch_);
    return s;
  }

  BertTrainResult run() {
    header();
    int64_t step = 0;
    if (resume_)
      step = resume();
    else if (init_)
      training::load_init_from(*init_, opt_.init_from, state_.store(), lead_);
    else
      model_.init_parameters(opt_.seed);
    BertTrainResult result;
    result.first_step = step;
    if (!opt_.dump_logits.empty()) {
      dump_logits();
      return result;
    }
    training::install_stop_signals();
    const double tokens_per_step = double(global_batch_) * opt_.seq;
    double time_sum = 0;
    training::DivergenceWatch divergence(opt_.max_skipped_steps);
    while (step < opt_.steps) {
      const auto t0 = Clock::now();
      const std::optional<double> lr = lr_.rate(step);  // none: the engine's scheduler's
      training::StepReport report;
      bool stop_requested = false;
      const BertStepLosses s = train_step(step, lr, report, stop_requested);
      ++step;
      const double dt = seconds_since(t0);
      const int64_t done = step - result.first_step;
      if (done > 1 || opt_.steps == 1) time_sum += dt;

      training::StepMetrics m;
      m.step = step;
      m.loss = s.loss;
      m.lr = report.lr;  // the rate the update ran at, whoever set it
      m.grad_norm = report.grad_norm;
      m.seconds = dt;
      m.tokens_per_s = tokens_per_step / dt;
      m.mem_model_states = state_.memory().total();
      m.mem_activations = acts_->bytes();
      m.mem_rss = training::resident_bytes();
      m.mem_peak_rss = training::peak_resident_bytes();
      m.comm = report.comm;
      m.extra = {{"mlm_loss", s.mlm},
                 {"nsp_loss", s.nsp},
                 {"mlm_accuracy", s.mlm_accuracy},
                 {"nsp_accuracy", s.nsp_accuracy}};
      // A CUDA build: what the GPU holds, as the driver counts it (zrt-plan's check compares).
      if (const int64_t used = training::device_used_bytes(); used >= 0)
        m.extra["mem_device_used"] = used;
      m.loss_detail =
          fmt::format("mlm {:.4f}, nsp {:.4f}, mlm acc {:.3f}", s.mlm, s.nsp, s.mlm_accuracy);
      log_.step(m);
      result.steps.push_back(s);
      const double per_step = done > 1 ? time_sum / double(done - 1) : dt;
      if (lead_ && (step % opt_.log_every == 0 || step == opt_.steps || done == 1))
        fmt::print("{}{}\n",
                   training::progress_line(m, opt_.steps, per_step * double(opt_.steps - step)),
                   report.applied ? "" : " | update skipped (non-finite gradient)");
      std::fflush(stdout);
      divergence.after_step(report, step, s.loss);
      if (stop_requested) {
        result.stopped = true;
        result.stop_signal = training::stop_signal();
        if (lead_)
          fmt::print("stopping after step {}: {}\n", step,
                     result.stop_signal == SIGUSR1   ? "SIGUSR1 received"
                     : result.stop_signal == SIGTERM ? "SIGTERM received"
                                                     : "another rank received a stop signal");
        break;
      }
      if (!opt_.save_path.empty() && opt_.save_every > 0 && step % opt_.save_every == 0 &&
          step < opt_.steps)
        result.checkpoint = save(step, opt_.save_async);
      if (opt_.eval_every > 0 && step % opt_.eval_every == 0 && step < opt_.steps)
        if (auto e = evaluate(step)) result.evals.push_back(*e);
    }
    result.steps_done = step;
    if (!opt_.save_path.empty()) result.checkpoint = save(step);
    if (!result.stopped)
      if (auto e = evaluate(step)) result.evals.push_back(*e);
    result.memory = state_.memory();
    result.stage0_bytes = state_.stage0_bytes();
    result.activation_bytes = acts_->bytes();
    if (lead_)
      fmt::print("memory per rank: model states {}, activations {}, peak resident {}\n",
                 training::state_memory_summary(result.memory, result.stage0_bytes),
                 format_bytes(acts_->bytes()), format_bytes(training::peak_resident_bytes()));
    if (opt_.plot && world_.rank == 0) {
      try {
        result.plots = training::write_plots(
            opt_.plot_dir, "bert",
            fmt::format("zrt-bert {} on {}", opt_.config.name, opt_.data_dir.filename().string()),
            log_.steps(), log_.evals());
        if (lead_)
          fmt::print("plots: {} and {}\n", result.plots.loss_png.string(),
                     result.plots.memory_png.string());
      } catch (const std::exception &e) {
        fmt::print(stderr, "zrt-bert: {}\n", e.what());
      }
    }
    const bool any = !result.steps.empty();
    log_.end({{"steps", step},
              {"reason", result.stopped ? "signal" : "done"},
              {"final_loss", any ? nlohmann::json(result.steps.back().loss) : nlohmann::json()},
              {"final_mlm_accuracy",
               any ? nlohmann::json(result.steps.back().mlm_accuracy) : nlohmann::json()},
              {"val_loss", result.evals.empty() ? nlohmann::json()
                                                : nlohmann::json(result.evals.back().loss)}});
    return result;
  }

  // --dump-logits: the heads' outputs for this rank's first validation batch, to compare
  // the model elsewhere (the ONNX export in ONNX Runtime). Every real token is predicted
  // (its own label), so the MLM head covers all of them. PATH gets float32: the MLM
  // probabilities [P, vocab] at the positions PATH.json lists (b * seq + t), the NSP
  // probabilities [batch, 2], the pooled output [batch, hidden]; PATH.json also the inputs.
  // Collective (the forward pass gathers parameters at stage 3); rank 0 writes.
  void dump_logits() {
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
          Kokkos::View<float *, Kokkos::HostSpace, nn::Unmanaged>(host.data() + at, n),
          Kokkos::View<const float *, nn::MemSpace, nn::Unmanaged>(from, n));
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
  std::optional<BertStepLosses> evaluate(int64_t step) {
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
    sum_over_ranks(world_, sum);
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
    log_.eval(em);
    if (lead_)
      fmt::print(
          "step {}: val loss {:.4f} (mlm {:.4f}, nsp {:.4f}, mlm acc {:.3f}, nsp acc "
          "{:.3f})\n",
          step, e.loss, e.mlm, e.nsp, e.mlm_accuracy, e.nsp_accuracy);
    return e;
  }

  void header() {
    const BertConfig &c = opt_.config;
    nlohmann::json info = {{"model", c.to_json()},
                           {"data", opt_.data_dir.string()},
                           {"train_examples", train_->size()},
                           {"val_examples", val_ ? val_->size() : 0},
                           {"ranks", world_.size},
                           {"batch", opt_.batch},
                           {"seq", opt_.seq},
                           {"accumulation_steps", accum_},
                           {"global_batch", global_batch_},
                           {"steps", opt_.steps},
                           {"lr", lr_.max_lr},
                           {"max_predictions", train_->max_predictions()},
                           {"model_states", state_.describe()},
                           {"mem_model_states", state_.memory().total()},
                           {"mem_model_states_stage0", state_.stage0_bytes()}};
    info.update(training::job_metadata());
    log_.run(info);
    if (!lead_) return;
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
        lr_.engine.empty()
            ? fmt::format("{:.1e} (warmup {}, {} decay to {:.1e})", lr_.max_lr, lr_.warmup_steps,
                          lr_.decay == training::LrDecay::polynomial ? "linear" : "cosine",
                          lr_.min_lr)
            : lr_.engine);
    fmt::print("model states: {}\n", state_.describe());
    const training::StateMemory mem = state_.memory();
    fmt::print("model states per rank: {}\n",
               training::state_memory_breakdown(mem, state_.stage0_bytes(),
                                                training::optimizer_label(opt_.optimizer.kind)));
    std::fflush(stdout);
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
  training::MetricsLog log_;
  training::LrSchedule lr_;
  std::optional<training::CheckpointInfo> resume_;
  std::optional<weights::WeightsInit> init_;
};

BertTrainer::BertTrainer(const BertTrainOptions &options, training::ModelState &state,
                         const World &world)
    : impl_(std::make_unique<Impl>(options, state, world)) {}

BertTrainer::~BertTrainer() = default;

BertTrainResult BertTrainer::run() {
  return impl_->run();
}

}  // namespace bert
