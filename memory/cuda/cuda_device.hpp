// The CUDA implementation of memory/device.hpp. cuda_device.cpp in builds with CUDA,
// no_cuda_device.cpp otherwise; both give make_cuda_device, which returns nullptr with
// the reason when this build or this node has no usable GPU.
#pragma once

#include <memory>
#include <string>

#include "memory/device.hpp"

namespace zrt {

std::unique_ptr<Device> make_cuda_device(int device, std::string *why);

// The cudaEvent_t behind e, or nullptr when e is empty or of another device kind (for the
// nccl backend, which orders its own stream after a producer's event).
void *cuda_event_of(const Event &e);

}  // namespace zrt
