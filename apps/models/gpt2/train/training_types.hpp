// The names zrt-gpt2's trainer, program and tests take from the trainers' shared library
// (apps/models/training), used unqualified inside namespace gpt2.
#pragma once

#include "training/checkpoint_info.hpp"
#include "training/divergence.hpp"
#include "training/lr_schedule.hpp"
#include "training/metrics.hpp"
#include "training/model_state.hpp"
#include "training/plot.hpp"
#include "training/rank_sum.hpp"
#include "training/signals.hpp"

namespace gpt2 {

using training::check_save_folder;
using training::checkpoint_path;
using training::CheckpointInfo;
using training::CheckpointOwner;
using training::clear_stop_signal;
using training::DivergenceWatch;
using training::EngineOptions;
using training::EvalMetrics;
using training::format_bytes;
using training::format_duration;
using training::install_stop_signals;
using training::LrSchedule;
using training::make_engine_model_state;
using training::MetricsLog;
using training::ModelState;
using training::OptimizerConfig;
using training::peak_resident_bytes;
using training::PlotFiles;
using training::progress_line;
using training::read_checkpoint_info;
using training::resident_bytes;
using training::StateMemory;
using training::StepMetrics;
using training::StepReport;
using training::stop_signal;
using training::TrainingDiverged;
using training::write_plots;

}  // namespace gpt2
