// The emulated device (memory.device.emulate = true): what a GPU is to zerort, made of
// host parts so the whole device orchestration runs and is tested on machines without
// one (see memory/device.hpp). Its memory is a separate reserved host arena whose
// addresses memory_kind() reports as device memory; its streams are a worker thread each,
// running copies, fills and device work in FIFO order; its events complete when the
// worker reaches them. The program's stream is the calling thread.
#pragma once

#include <memory>

#include "memory/device.hpp"

namespace zrt {

std::unique_ptr<Device> make_emulated_device();

}  // namespace zrt
