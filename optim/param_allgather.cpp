#include "optim/param_allgather.hpp"

#include <deque>
#include <utility>

#include "comm/dtype.hpp"

namespace zrt {

void all_gather_updated_params(Communicator &comm, EngineMemory &memory, const Layout &layout,
                               ModelState &state, zrt_dtype_t dtype, size_t window_bytes,
                               CommStats &stats, int64_t step) {
  const size_t es = dtype_size(dtype);
  const int rank = comm.rank();
  const Event ready = memory.ready();
  size_t bytes_in_flight = 0;
  std::deque<std::pair<OwnedRequest, size_t>> window;
  for (const BucketInfo &b : layout.buckets()) {
    while (!window.empty() && bytes_in_flight + b.length * es > window_bytes) {
      window.front().first.wait();
      bytes_in_flight -= window.front().second;
      window.pop_front();
    }
    CollArgs a;
    a.kind = CollKind::AllGather;
    a.recv = state.params(b.offset);
    a.send = state.params(layout.slice_begin(b, rank));  // in place
    a.count = b.length;
    a.dtype = dtype;
    a.ready = ready;
    a.recv_cold = true;  // the next forward reads the parameters, after all the buckets
    a.purpose = {CollPurpose::What::ParamAllGather, b.index, step};
    window.emplace_back(post_owned(comm, a, stats), b.length * es);
    bytes_in_flight += b.length * es;
  }
  for (auto &w : window)
    w.first.wait();
}

std::vector<float> gather_param_weights(Communicator &comm, EngineMemory &memory,
                                        const Layout &layout, const ModelState &state,
                                        const ParamInfo &p, CommStats &stats, int64_t step) {
  const BucketInfo &g = layout.bucket(p.bucket);
  std::vector<float> whole(g.group_length);
  // The weights' own kind of memory on both sides of the collective; device weights come
  // to the host afterwards. Every rank's slice of a bucket is in the same kind (a partial
  // offload splits at the same bucket on every rank).
  auto mine_of = [&](int k) {
    return StageLayout::slice_of(layout, layout.bucket(k), comm.rank());
  };
  bool any_device = false;
  for (int k = p.bucket; k < p.bucket + p.buckets; ++k)
    any_device = any_device || state.state_place(mine_of(k)) == Place::Device;
  EngineBuffer staging;
  if (any_device)
    staging = EngineBuffer(memory, Place::Device, g.group_length * sizeof(float),
                           Lifetime::Transient, false);
  const Event ready = memory.ready();
  for (int k = p.bucket; k < p.bucket + p.buckets; ++k) {
    const BucketInfo &b = layout.bucket(k);
    const OwnedRange mine = mine_of(k);
    const bool device = state.state_place(mine) == Place::Device;
    CollArgs a;
    a.kind = CollKind::AllGather;
    a.send = state.range(mine).weights;
    a.recv = (device ? staging.data<float>() : whole.data()) + (b.offset - g.group_offset);
    a.count = b.length;
    a.dtype = ZRT_DTYPE_FP32;
    a.ready = ready;
    a.purpose = {CollPurpose::What::WeightsGather, k, step};
    post_owned(comm, a, stats).wait();
    if (device)
      memory.copy(whole.data() + (b.offset - g.group_offset),
                  staging.data<float>() + (b.offset - g.group_offset), b.length * sizeof(float));
  }
  if (any_device) memory.synchronize();
  return whole;
}

}  // namespace zrt
