// The names GPT-2's model, trainer and tests take from the shared layer library (apps/models/nn),
// used unqualified inside namespace gpt2.
#pragma once

#include "nn/parameter_store.hpp"
#include "nn/tensor.hpp"
#include "nn/tensor_spec.hpp"

namespace gpt2 {

using nn::as_mat;
using nn::CMat;
using nn::CVec;
using nn::ExecSpace;
using nn::GradBuffer;
using nn::Mat;
using nn::MemSpace;
using nn::ParameterStore;
using nn::RangePolicy;
using nn::TeamMember;
using nn::TeamPolicy;
using nn::TensorSpec;
using nn::Tokens;
using nn::Unmanaged;
using nn::Vec;
namespace kmath = nn::kmath;

}  // namespace gpt2
