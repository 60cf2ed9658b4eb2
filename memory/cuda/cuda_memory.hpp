// The CUDA paths of the memory layer. The build compiles cuda_memory.cpp when a CUDA
// toolkit is found and no_cuda_memory.cpp otherwise; callers only see these factories,
// which return nullptr (with the reason) when this build or this node has no usable GPU.
#pragma once

#include <memory>
#include <string>

#include "memory/copy_engine.hpp"
#include "memory/resource.hpp"

namespace zrt {

// Device memory of CUDA device `device` (cudaMalloc segments).
std::unique_ptr<Resource> make_cuda_device_resource(int device, std::string *why);
// Pinned host memory from cudaHostAlloc (portable: usable by every device's copies).
std::unique_ptr<Resource> make_cuda_pinned_resource(int device, std::string *why);
// Copies on a non-blocking CUDA stream of `device`, completion tracked with events.
std::unique_ptr<CopyEngine> make_cuda_copy_engine(int device, std::string *why);
// Total memory of the device, 0 if unknown.
size_t cuda_device_memory(int device);

}  // namespace zrt
