// zerort::nn, the C++ layers: each a forward/backward pair on Kokkos views (host or device
// memory, row-major (rows, width) activations), with its shapes in its header, and the
// model states in zerort's engine that parameters are registered with (any ZeRO stage:
// stage 3 gathers a layer's parameters inside forward and backward). zrt-gpt2 and zrt-bert
// are written on exactly these; the configured models of <zerort/model.h> too.
//
// Link zerort::nn (CMake) and Kokkos, and start Kokkos before using a layer (the
// configured models start it themselves). The headers one by one:
#pragma once

#include <zerort/nn/attention.hpp>
#include <zerort/nn/crossentropy.hpp>
#include <zerort/nn/embedding.hpp>
#include <zerort/nn/encoder.hpp>
#include <zerort/nn/engine_model_state.hpp>
#include <zerort/nn/gelu.hpp>
#include <zerort/nn/kokkos_device.hpp>
#include <zerort/nn/layernorm.hpp>
#include <zerort/nn/local_parameter_store.hpp>
#include <zerort/nn/matmul.hpp>
#include <zerort/nn/model_state.hpp>
#include <zerort/nn/nearest_name.hpp>
#include <zerort/nn/normal.hpp>
#include <zerort/nn/parameter_store.hpp>
#include <zerort/nn/residual.hpp>
#include <zerort/nn/rows.hpp>
#include <zerort/nn/store_views.hpp>
#include <zerort/nn/tanh.hpp>
#include <zerort/nn/tensor.hpp>
#include <zerort/nn/tensor_spec.hpp>
