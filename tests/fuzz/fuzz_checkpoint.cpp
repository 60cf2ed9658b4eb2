// Fuzz target: zerort's checkpoint reader on arbitrary bytes must fail with a status and a
// message, never crash.
#include <unistd.h>
#include <zerort/zerort.h>

#include <cstdio>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = "/tmp/zrt_fuzz_checkpoint_" + std::to_string(getpid()) + ".h5";
  FILE *f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  zrt_checkpoint_h c = nullptr;
  if (zrt_checkpoint_open(path.c_str(), &c) == ZRT_SUCCESS) {
    int n = 0;
    zrt_checkpoint_tensor_count(c, &n);
    for (int i = 0; i < n && i < 16; ++i) {
      zrt_checkpoint_tensor_t t{};
      t.field_mask = ZRT_CHECKPOINT_TENSOR_FIELD_ALL;
      if (zrt_checkpoint_tensor(c, i, &t) != ZRT_SUCCESS || t.numel > (1 << 24)) continue;
      std::vector<float> v(static_cast<size_t>(t.numel));
      zrt_checkpoint_read(c, i, v.data());
      int ok = 0;
      zrt_checkpoint_verify(c, i, &ok);
    }
    zrt_checkpoint_close(c);
  }
  size_t length = 0;
  zrt_checkpoint_describe(path.c_str(), nullptr, 0, &length);
  std::remove(path.c_str());
  return 0;
}
