#include "optim/checkpoint/block_plan.hpp"

#include <algorithm>

#include "runtime/error.hpp"

namespace zrt::checkpoint {

namespace {

size_t round_up(size_t x, size_t block) {
  return (x + block - 1) / block * block;
}

}  // namespace

SavePlan plan_save(std::vector<OwnedRun> all, const std::vector<size_t> &numel, size_t block) {
  std::sort(all.begin(), all.end(), [](const OwnedRun &a, const OwnedRun &b) {
    return a.param != b.param ? a.param < b.param : a.begin < b.begin;
  });
  SavePlan plan;
  size_t i = 0;
  for (size_t p = 0; p < numel.size(); ++p) {
    const size_t first = i;
    size_t at = 0;
    for (; i < all.size() && all[i].param == static_cast<int>(p); ++i) {
      if (all[i].begin != at || all[i].count == 0)
        fail(ZRT_ERR_INTERNAL,
             "checkpoint plan: parameter {} has a run at {} (+{}) where element {} was expected", p,
             all[i].begin, all[i].count, at);
      at += all[i].count;
    }
    if (at != numel[p])
      fail(ZRT_ERR_INTERNAL, "checkpoint plan: parameter {} has {} of its {} elements saved", p, at,
           numel[p]);
    for (size_t r = first; r < i; ++r) {
      const OwnedRun &run = all[r];
      const size_t start = round_up(run.begin, block), stop = run.begin + run.count;
      if (start >= stop) continue;  // inside a block another run begins
      const size_t end = std::min(round_up(stop, block), numel[p]);
      plan.writes.push_back({run.param, run.owner, start, end - start});
      // The block's tail past this run: the following runs' elements, sent by their owners.
      for (size_t j = r + 1; j < i && all[j].begin < end; ++j)
        if (all[j].owner != run.owner)
          plan.transfers.push_back({run.param, all[j].owner, run.owner, all[j].begin,
                                    std::min(end, all[j].begin + all[j].count) - all[j].begin});
    }
  }
  if (i != all.size())
    fail(ZRT_ERR_INTERNAL, "checkpoint plan: a run names parameter {} of {}", all[i].param,
         numel.size());
  return plan;
}

}  // namespace zrt::checkpoint
