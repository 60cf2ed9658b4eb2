#include "memory/cuda/cuda_memory.hpp"

namespace zrt {

namespace {
std::nullptr_t unavailable(std::string *why) {
  if (why != nullptr) *why = "this build of zerort has no CUDA support";
  return nullptr;
}
}  // namespace

std::unique_ptr<Resource> make_cuda_device_resource(int, std::string *why) {
  return unavailable(why);
}
std::unique_ptr<Resource> make_cuda_pinned_resource(int, std::string *why) {
  return unavailable(why);
}
std::unique_ptr<CopyEngine> make_cuda_copy_engine(int, std::string *why) {
  return unavailable(why);
}
size_t cuda_device_memory(int) {
  return 0;
}

}  // namespace zrt
