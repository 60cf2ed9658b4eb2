#include "tensor_blocks.hpp"

#include <algorithm>

namespace weights {

void transposed_blocks(const std::vector<float> &values, int64_t rows, int64_t cols,
                       const BlockSink &sink) {
  // Output row c is input column c: a block of whole output rows is a band of columns.
  const int64_t band =
      std::max<int64_t>(1, static_cast<int64_t>(kBlockValues) / std::max<int64_t>(rows, 1));
  std::vector<float> block(static_cast<size_t>(std::min(band, cols) * rows));
  for (int64_t c0 = 0; c0 < cols; c0 += band) {
    const int64_t c1 = std::min(cols, c0 + band);
    // Input rows outer: each is read once per band, in order.
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = c0; c < c1; ++c)
        block[static_cast<size_t>((c - c0) * rows + r)] = values[static_cast<size_t>(r * cols + c)];
    sink(block.data(), static_cast<size_t>((c1 - c0) * rows));
  }
}

}  // namespace weights
