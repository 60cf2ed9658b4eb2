#include "trainer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>

#include "data/data_loader.hpp"
#include "model/activations.hpp"
#include "model/gpt2_model.hpp"
#include "tokenizer/bpe_tokenizer.hpp"
#include "training/memory_check.hpp"

namespace gpt2 {
namespace {

// One batch's token ids on the host and on the device.
struct Batch {
  Batch(int B, int T)
      : inputs(static_cast<size_t>(B) * T),
        targets(inputs.size()),
        d_inputs("inputs", inputs.size()),
        d_targets("targets", inputs.size()) {}
  void to_device() {
    using HostView = Kokkos::View<const int *, Kokkos::HostSpace, Unmanaged>;
    Kokkos::deep_copy(d_inputs, HostView(inputs.data(), inputs.size()));
    Kokkos::deep_copy(d_targets, HostView(targets.data(), targets.size()));
  }
  std::vector<int> inputs, targets;
  Kokkos::View<int *, MemSpace> d_inputs, d_targets;
};

// Recompute keeps only the block outputs and rebuilds the rest in backward; offload keeps
// the rest in host memory. Together there would be nothing left to offload but the block
// outputs (DeepSpeed's cpu_checkpointing), which this trainer does not do.
ActivationMode activation_mode(const TrainOptions &opt) {
  if (opt.recompute && opt.offload_activations)
    throw std::invalid_argument(
        "--offload-activations and --recompute do not combine: recompute already keeps only "
        "the block outputs (offloading those is not implemented); choose one");
  return opt.recompute             ? ActivationMode::recompute
         : opt.offload_activations ? ActivationMode::offload
                                   : ActivationMode::keep;
}

// Before the run allocates them (Kokkos zeroes, so touches, every view): the activations
// where they live in host memory (the model's on the host; what the offload holds in pinned
// host memory) against what this rank may still use.
void check_activation_memory(const TrainOptions &opt, const World &world) {
  const ActivationMode mode = activation_mode(opt);
  std::vector<training::HostNeed> needs;
  if (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible)
    needs.push_back({fmt::format("activations for {} x {} tokens", opt.batch, opt.seq),
                     Activations<float>::planned_bytes(opt.config, opt.batch, opt.seq, mode)});
  if (mode == ActivationMode::offload)
    needs.push_back({"offloaded activations",
                     Activations<float>::planned_offloaded_bytes(opt.config, opt.batch, opt.seq)});
  const char *remedies = mode == ActivationMode::keep
                             ? "a smaller --batch or --seq, --recompute or --offload-activations"
                             : "a smaller --batch or --seq";
  training::check_host_memory(world.context, needs, remedies);
  // The model on a GPU (a CUDA build): its activations there.
  if (!Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible)
    training::check_device_memory(
        {{fmt::format("activations for {} x {} tokens", opt.batch, opt.seq),
          Activations<float>::planned_bytes(opt.config, opt.batch, opt.seq, mode)}},
        remedies);
}

}  // namespace

struct Trainer::Impl : training::TrainerHooks {
  Impl(const TrainOptions &opt, ModelState &state, const World &world)
      : opt_(opt),
        state_(state),
        world_(world),
        lead_(world.rank == 0 && !opt.quiet),
        model_(opt.config, state.store()),
        train_file_(
            TokenFile::open(opt.data_dir / "train.bin", opt.data_format, opt.config.vocab_size)),
        train_loader_(train_file_, opt.batch, opt.seq, world.rank, world.size),
        acts_(opt.config, opt.batch, opt.seq, activation_mode(opt), world.context),
        batch_(opt.batch, opt.seq) {
    if (opt.seq > opt.config.max_seq_len)
      throw std::invalid_argument(fmt::format("--seq {} exceeds the model's context of {} tokens",
                                              opt.seq, opt.config.max_seq_len));
    if (std::filesystem::exists(opt.data_dir / "val.bin")) {
      val_file_.emplace(
          TokenFile::open(opt.data_dir / "val.bin", opt.data_format, opt.config.vocab_size));
      if (static_cast<int64_t>(val_file_->size()) > int64_t{opt.batch} * opt.seq * world.size)
        val_loader_.emplace(*val_file_, opt.batch, opt.seq, world.rank, world.size);
    }
    if (!opt.tokenizer_dir.empty() && std::filesystem::exists(opt.tokenizer_dir / "encoder.json"))
      tokenizer_.emplace(BpeTokenizer::load_dir(opt.tokenizer_dir));
    loop_.emplace(opt,
                  training::TrainerIdentity{
                      "zrt-gpt2", "gpt2", opt.config.name,
                      CheckpointOwner{"zrt-gpt2",
                                      "GPT-2",
                                      opt.config.to_json(),
                                      {"n_layer", "n_head", "n_embd", "vocab_size", "n_positions"}},
                      weights::ModelKind::gpt2},
                  state, world);
  }

  TrainResult run() {
    const training::RunSummary s = loop_->run(*this);
    TrainResult result;
    result.losses = s.losses;
    result.evals = std::move(evals_);
    result.steps_done = s.steps_done;
    result.stopped = s.stopped;
    result.stop_signal = s.stop_signal;
    result.last_sample = std::move(last_sample_);
    result.plots = s.plots;
    result.memory = s.memory;
    result.stage0_bytes = s.stage0_bytes;
    result.first_step = s.first_step;
    result.checkpoint = s.checkpoint;
    // A --dump-logits run trained nothing and reports no memory.
    if (opt_.dump_logits.empty()) {
      result.activation_bytes = acts_.bytes();
      result.offloaded_activation_bytes = acts_.offloaded().peak_offloaded;
    }
    return result;
  }

  // Moves the loader past the batches the saved run had read (the same batches when batch,
  // sequence length and ranks are the same).
  std::string resumed(const CheckpointInfo &r) override {
    const nlohmann::json &m = r.metadata;
    const int64_t saved_batch_tokens = m.value("batch", int64_t{opt_.batch}) *
                                       m.value("seq", int64_t{opt_.seq}) *
                                       m.value("ranks", int64_t{world_.size});
    const int64_t batch_tokens = int64_t{opt_.batch} * opt_.seq * world_.size;
    micro_batches_ = r.micro_batches * saved_batch_tokens / batch_tokens;
    train_loader_.skip(micro_batches_);
    if (saved_batch_tokens == batch_tokens && m.value("steps", opt_.steps) == opt_.steps) return "";
    return fmt::format(
        "note: it was saved by a run of batch {} x {} tokens on {} rank(s) planning {} "
        "steps; this one continues at the same token of the data, with its own schedule",
        m.value("batch", 0), m.value("seq", 0), m.value("ranks", 0), m.value("steps", 0));
  }

  nlohmann::json checkpoint_metadata(int64_t step) override {
    return {{"program", "zrt-gpt2"},
            {"model", opt_.config.to_json()},
            {"step", step},
            {"micro_batches", micro_batches_},
            {"batch", opt_.batch},
            {"seq", opt_.seq},
            {"ranks", world_.size},
            {"accumulation_steps", opt_.optimizer.accumulation_steps},
            {"steps", opt_.steps},
            {"seed", opt_.seed},
            {"data", opt_.data_dir.string()}};
  }

  void init_parameters() override { model_.init_parameters(opt_.seed); }

  double tokens_per_step() const override {
    const int accum = std::max(1, opt_.optimizer.accumulation_steps);
    return double(opt_.batch) * opt_.seq * accum * world_.size;
  }

  training::StepOutcome train_step(int64_t /*step*/, std::optional<double> lr) override {
    const int accum = std::max(1, opt_.optimizer.accumulation_steps);
    double loss = 0;
    training::StepOutcome out;
    training::CommFigures comm;
    // The rate first: ZeRO-Offload's CPU step starts during the last backward.
    state_.begin_step(lr);
    for (int k = 0; k < accum; ++k) {
      train_loader_.next(batch_.inputs, batch_.targets);
      ++micro_batches_;
      batch_.to_device();
      loss +=
          model_.forward(acts_, batch_.d_inputs, batch_.d_targets, opt_.batch, opt_.seq) / accum;
      // The gradient of the loss itself (times the fp16 loss scale): the model states sum
      // the micro-steps and divide by their number and by the ranks.
      model_.backward(acts_, batch_.d_inputs, batch_.d_targets, opt_.batch, opt_.seq,
                      static_cast<float>(state_.loss_scale()));
      out.report = state_.step(lr);
      comm += out.report.comm;
    }
    out.report.comm = comm;  // the whole step's
    // One small all-reduce: the mean loss, and whether any rank was asked to stop.
    std::vector<double> shared = {loss};
    out.stop_requested = training::sum_with_stop_flag(world_, shared);
    out.loss = shared[0] / world_.size;
    return out;
  }

  int64_t activation_bytes() const override { return acts_.bytes(); }

  void add_memory_metrics(StepMetrics &m) override {
    m.mem_activations_sampling = sample_bytes_;
    m.mem_activations_offloaded = acts_.offloaded().peak_offloaded;
  }

  std::string activations_note() const override {
    return offload_note() + (sample_bytes_ > 0
                                 ? fmt::format(" + {} for sampling", format_bytes(sample_bytes_))
                                 : "");
  }

  void after_step(int64_t step, bool last) override {
    if (last ? opt_.sample_every >= 0 : opt_.sample_every > 0 && step % opt_.sample_every == 0)
      last_sample_ = generate(step);
  }

  nlohmann::json run_record() override {
    return {{"model", opt_.config.to_json()},
            {"data", opt_.data_dir.string()},
            {"train_tokens", train_file_.size()},
            {"val_tokens", val_file_ ? val_file_->size() : 0},
            {"ranks", world_.size},
            {"batch", opt_.batch},
            {"seq", opt_.seq},
            {"accumulation_steps", opt_.optimizer.accumulation_steps},
            {"steps", opt_.steps},
            {"lr", opt_.lr.max_lr},
            {"recompute", opt_.recompute},
            {"offload_activations", opt_.offload_activations}};
  }

  void print_header() override {
    const Gpt2Config &c = opt_.config;
    const LrSchedule &lr = loop_->lr();
    fmt::print(
        "model {}: {} layers, {} heads, {} channels, vocab {}, context {}: {:.2f}M "
        "parameters\n",
        c.name, c.num_layers, c.num_heads, c.channels, c.vocab_size, c.max_seq_len,
        c.num_parameters() / 1e6);
    fmt::print("data {}: {} train tokens ({}), {} val tokens; {} epoch(s) planned\n",
               opt_.data_dir.string(), train_file_.size(), token_format_name(train_file_.format()),
               val_file_ ? val_file_->size() : 0,
               fmt::format("{:.2f}", double(opt_.steps) * opt_.optimizer.accumulation_steps /
                                         double(train_loader_.batches_per_epoch())));
    fmt::print(
        "batch {} x {} tokens x {} micro-step(s) x {} rank(s) = {} tokens per step; lr "
        "{}; {}\n",
        opt_.batch, opt_.seq, opt_.optimizer.accumulation_steps, world_.size,
        int64_t{opt_.batch} * opt_.seq * opt_.optimizer.accumulation_steps * world_.size,
        lr.engine.empty() ? fmt::format("{:.1e} (warmup {}, cosine to {:.1e})", lr.max_lr,
                                        lr.warmup_steps, lr.min_lr)
                          : lr.engine,
        opt_.recompute              ? "activations recomputed in backward"
        : !opt_.offload_activations ? "activations kept"
        : c.num_layers > 2
            ? fmt::format("activations of blocks 0-{} offloaded to host memory", c.num_layers - 3)
            : std::string("activations kept (offload moves none: the last two blocks stay)"));
  }

  // " (+ 12 MiB offloaded to host memory, 0.1 s waited for copies)", or nothing.
  std::string offload_note() const {
    const OffloadMemory m = acts_.offloaded();
    if (m.peak_offloaded == 0) return "";
    return fmt::format(" (+ {} offloaded to host memory, {:.2f} s waited for copies)",
                       format_bytes(m.peak_offloaded), m.exposed_seconds);
  }

  // --dump-logits: the model's logits for the first validation batch (this rank's), for
  // comparing the model elsewhere (the ONNX export in ONNX Runtime). PATH gets the logits,
  // float32 [batch, seq, vocab] little-endian; PATH.json the shape and the token ids.
  // Collective (the forward pass gathers parameters at stage 3); rank 0 writes.
  void dump_logits() override {
    if (!val_loader_)
      throw std::invalid_argument("--dump-logits: no validation data to take a batch from");
    val_loader_->reset();
    val_loader_->next(batch_.inputs, batch_.targets);
    batch_.to_device();
    model_.forward(acts_, batch_.d_inputs, decltype(batch_.d_targets)(), opt_.batch, opt_.seq);
    if (!lead_) return;
    const int64_t V = opt_.config.vocab_size;
    const size_t n = static_cast<size_t>(opt_.batch) * opt_.seq * static_cast<size_t>(V);
    std::vector<float> host(n);
    Kokkos::deep_copy(Kokkos::View<float *, Kokkos::HostSpace, Unmanaged>(host.data(), n),
                      Kokkos::View<const float *, MemSpace, Unmanaged>(acts_.logits, n));
    const std::string path = opt_.dump_logits.string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(host.data()),
              static_cast<std::streamsize>(n * sizeof(float)));
    std::ofstream meta(path + ".json", std::ios::trunc);
    meta << nlohmann::json{{"batch", opt_.batch},
                           {"seq", opt_.seq},
                           {"vocab", V},
                           {"dtype", "float32"},
                           {"input_ids", batch_.inputs}}
                .dump()
         << '\n';
    if (!out || !meta)
      throw std::runtime_error(fmt::format("--dump-logits {}: cannot write", path));
    fmt::print("logits of one validation batch ({} x {} x {}) in {}, the token ids in {}.json\n",
               opt_.batch, opt_.seq, V, path, path);
  }

  // The mean loss of eval_batches batches from the start of val.bin; NaN without them (the
  // record says so all the same).
  std::optional<double> evaluate(int64_t step) override {
    EvalMetrics e{step, std::nan("")};
    if (!val_loader_) {
      evals_.push_back(e);
      return e.val_loss;
    }
    val_loader_->reset();
    std::vector<double> sum = {0};
    for (int i = 0; i < opt_.eval_batches; ++i) {
      val_loader_->next(batch_.inputs, batch_.targets);
      batch_.to_device();
      sum[0] += model_.forward(acts_, batch_.d_inputs, batch_.d_targets, opt_.batch, opt_.seq);
    }
    training::sum_over_ranks(world_.comm, world_.size, sum);
    e.val_loss = sum[0] / (double(opt_.eval_batches) * world_.size);
    loop_->log().eval(e);
    if (lead_) fmt::print("step {}: val loss {:.4f}\n", step, e.val_loss);
    evals_.push_back(e);
    return e.val_loss;
  }

  std::string generate(int64_t step) {
    if (!sample_acts_) {
      sample_acts_ =
          std::make_unique<Activations<float>>(opt_.config, 1, opt_.seq, ActivationMode::inference);
      sample_bytes_ = sample_acts_->bytes();
    }
    // Documents begin with <|endoftext|>, so the model starts a new one.
    const int start = opt_.config.vocab_size > 50256 ? 50256 : 0;
    SampleOptions so = opt_.sample;
    so.seed = opt_.sample.seed + static_cast<uint64_t>(step);
    std::vector<int> ids = sample(model_, *sample_acts_, {start}, so);
    std::string text = tokenizer_
                           ? tokenizer_->decode(ids)
                           : fmt::format("(token ids; no tokenizer) {}", fmt::join(ids, " "));
    loop_->log().sample(step, text);
    if (lead_) fmt::print("step {}: sample ---\n{}\n---\n", step, text);
    return text;
  }

  const TrainOptions &opt_;
  ModelState &state_;
  const World &world_;
  const bool lead_;
  Gpt2Model<float> model_;
  TokenFile train_file_;
  DataLoader train_loader_;
  std::optional<TokenFile> val_file_;
  std::optional<DataLoader> val_loader_;
  std::optional<BpeTokenizer> tokenizer_;
  Activations<float> acts_;
  std::unique_ptr<Activations<float>> sample_acts_;
  int64_t sample_bytes_ = 0;
  Batch batch_;
  std::optional<training::TrainingLoop> loop_;
  std::vector<EvalMetrics> evals_;
  std::string last_sample_;
  int64_t micro_batches_ = 0;  // batches this rank's loader has read, over all runs
};

Trainer::Trainer(const TrainOptions &options, ModelState &state, const World &world) {
  check_activation_memory(options, world);
  impl_ = std::make_unique<Impl>(options, state, world);
}

Trainer::~Trainer() = default;

TrainResult Trainer::run() {
  return impl_->run();
}

TrainResult train(const TrainOptions &options, ModelState &state, const World &world) {
  return Trainer(options, state, world).run();
}

}  // namespace gpt2
