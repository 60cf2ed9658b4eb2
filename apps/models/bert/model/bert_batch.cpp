#include "bert_batch.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace bert {
namespace {

using HostView =
    Kokkos::View<const int *, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

void copy(Kokkos::View<int *, MemSpace> to, const std::vector<int> &from) {
  Kokkos::deep_copy(Kokkos::subview(to, std::make_pair(size_t{0}, from.size())),
                    HostView(from.data(), from.size()));
}

}  // namespace

DeviceBatch::DeviceBatch(int max_batch, int max_seq)
    : max_batch_(max_batch),
      max_seq_(max_seq),
      ids_("input_ids", size_t(max_batch) * max_seq),
      segments_("segment_ids", size_t(max_batch) * max_seq),
      lengths_("lengths", max_batch),
      cls_("cls_rows", max_batch),
      mlm_rows_("mlm_rows", size_t(max_batch) * max_seq),
      mlm_labels_("mlm_labels", size_t(max_batch) * max_seq),
      nsp_("nsp_labels", max_batch) {}

void DeviceBatch::set(const HostBatch &h, int vocab_size, int type_vocab) {
  auto bad = [](const std::string &what) { throw std::invalid_argument("batch: " + what); };
  if (h.B <= 0 || h.T <= 0 || h.B > max_batch_ || h.T > max_seq_)
    bad(fmt::format("{} x {} tokens does not fit {} x {}", h.B, h.T, max_batch_, max_seq_));
  const size_t BT = size_t(h.B) * h.T;
  if (h.input_ids.size() != BT || h.segment_ids.size() != BT || h.mlm_labels.size() != BT ||
      h.lengths.size() != size_t(h.B) || h.nsp_labels.size() != size_t(h.B))
    bad("arrays of the wrong size");
  std::vector<int> cls(size_t(h.B)), rows, labels;
  for (int b = 0; b < h.B; ++b) {
    const int len = h.lengths[size_t(b)];
    if (len < 1 || len > h.T) bad(fmt::format("sequence {} has length {} (1..{})", b, len, h.T));
    if (h.nsp_labels[size_t(b)] != 0 && h.nsp_labels[size_t(b)] != 1)
      bad(fmt::format("sequence {}: NSP label {} (0 or 1)", b, h.nsp_labels[size_t(b)]));
    cls[size_t(b)] = b * h.T;
  }
  for (size_t i = 0; i < BT; ++i) {
    if (h.input_ids[i] < 0 || h.input_ids[i] >= vocab_size)
      bad(fmt::format("token id {} at position {} is outside the vocabulary of {}", h.input_ids[i],
                      i, vocab_size));
    if (h.segment_ids[i] < 0 || h.segment_ids[i] >= type_vocab)
      bad(fmt::format("segment id {} at position {} (0..{})", h.segment_ids[i], i, type_vocab - 1));
    if (h.mlm_labels[i] < 0) continue;
    if (h.mlm_labels[i] >= vocab_size)
      bad(fmt::format("MLM label {} at position {} is outside the vocabulary of {}",
                      h.mlm_labels[i], i, vocab_size));
    if (int(i % size_t(h.T)) >= h.lengths[i / size_t(h.T)])
      bad(fmt::format("MLM label at padded position {}", i));
    rows.push_back(static_cast<int>(i));
    labels.push_back(h.mlm_labels[i]);
  }
  if (rows.empty()) bad("no masked position: MLM needs at least one");
  copy(ids_, h.input_ids);
  copy(segments_, h.segment_ids);
  copy(lengths_, h.lengths);
  copy(cls_, cls);
  copy(mlm_rows_, rows);
  copy(mlm_labels_, labels);
  copy(nsp_, h.nsp_labels);
  auto first = [](Kokkos::View<int *, MemSpace> v, size_t n) {
    return Tokens(Kokkos::subview(v, std::make_pair(size_t{0}, n)));
  };
  view_.B = h.B;
  view_.T = h.T;
  view_.P = static_cast<int>(rows.size());
  view_.input_ids = first(ids_, BT);
  view_.segment_ids = first(segments_, BT);
  view_.lengths = first(lengths_, size_t(h.B));
  view_.cls_rows = first(cls_, size_t(h.B));
  view_.mlm_rows = first(mlm_rows_, rows.size());
  view_.mlm_labels = first(mlm_labels_, rows.size());
  view_.nsp_labels = first(nsp_, size_t(h.B));
}

}  // namespace bert
