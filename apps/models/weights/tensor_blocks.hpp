// A tensor's values handed on a block at a time, so that what an export does to them on
// the way out (a transposition to Hugging Face's layout, a cast to 16 bits) needs no
// second copy of the tensor: an export holds the tensor it read and one block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace weights {

/// Receives the next @p count values of a tensor, row-major in the layout written out.
/// @p values is valid during the call only.
using BlockSink = std::function<void(const float *values, size_t count)>;

/// About this many values per block (4 MiB of fp32): large enough that each block costs
/// one cheap write, small against a model's tensors.
inline constexpr size_t kBlockValues = size_t{1} << 20;

/// @p values, row-major [rows, cols], passed to @p sink as [cols, rows], whole rows of the
/// result at a time: what transposed() returns, without holding it whole.
void transposed_blocks(const std::vector<float> &values, int64_t rows, int64_t cols,
                       const BlockSink &sink);

}  // namespace weights
