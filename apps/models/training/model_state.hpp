// The trainers' names for the model states of zerort::nn (<zerort/nn/model_state.hpp>:
// the interface; <zerort/nn/engine_model_state.hpp>: zerort's engine behind it), which the
// trainers and the configured models of zrt_model_create share.
#pragma once

#include <zerort/nn/engine_model_state.hpp>
#include <zerort/nn/kokkos_device.hpp>
#include <zerort/nn/model_state.hpp>

namespace training {

using zrt::nn::CommFigures;
using zrt::nn::EngineOptions;
using zrt::nn::make_engine_model_state;
using zrt::nn::ModelState;
using zrt::nn::OptimizerConfig;
using zrt::nn::ParameterStore;
using zrt::nn::StateMemory;
using zrt::nn::StepReport;
// Kokkos on the rank's GPU
using zrt::nn::cuda_unusable;
using zrt::nn::device_memory;
using zrt::nn::device_used_bytes;
using zrt::nn::kokkos_device_for;
using zrt::nn::start_kokkos;

}  // namespace training
