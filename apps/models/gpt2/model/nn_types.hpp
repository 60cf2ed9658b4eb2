// The names GPT-2's model, trainer and tests take from the shared layer library (nn/, zerort::nn),
// used unqualified inside namespace gpt2.
#pragma once

#include <zerort/nn/parameter_store.hpp>
#include <zerort/nn/tensor.hpp>
#include <zerort/nn/tensor_spec.hpp>

namespace gpt2 {

using zrt::nn::as_mat;
using zrt::nn::CMat;
using zrt::nn::CVec;
using zrt::nn::ExecSpace;
using zrt::nn::GradBuffer;
using zrt::nn::Mat;
using zrt::nn::MemSpace;
using zrt::nn::ParameterStore;
using zrt::nn::RangePolicy;
using zrt::nn::TeamMember;
using zrt::nn::TeamPolicy;
using zrt::nn::TensorSpec;
using zrt::nn::Tokens;
using zrt::nn::Unmanaged;
using zrt::nn::Vec;
namespace kmath = zrt::nn::kmath;

}  // namespace gpt2
