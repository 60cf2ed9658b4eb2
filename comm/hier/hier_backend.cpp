#include "comm/hier/hier_backend.hpp"

#include <cstring>
#include <functional>
#include <vector>

#include "comm/dtype.hpp"
#include "comm/group_nodes.hpp"
#include "comm/partition.hpp"
#include "comm/registry.hpp"
#include "comm/shm/shm_backend.hpp"
#include "comm/start_order.hpp"
#include "runtime/error.hpp"
#include "runtime/mpi_comm.hpp"
#include "runtime/mpi_error.hpp"
#include "runtime/runtime_context.hpp"

namespace zrt {

namespace {

// One stage of a hierarchical operation: a sub-operation made up front (shm stages, whose
// pipeline steps are reserved in sequence order when the operation starts) or when its
// turn comes (network stages, which need their input and must start in the same order on
// every rank of the rail), then a local finish.
struct Stage {
  std::unique_ptr<BackendOp> op;
  std::function<std::unique_ptr<BackendOp>()> make;
  bool ticketed = false;
  uint64_t ticket = 0;
  std::function<void()> after;
};

class HierOp final : public BackendOp {
 public:
  HierOp(StartOrder &order, std::vector<Stage> stages, std::vector<char> temp)
      : order_(order), stages_(std::move(stages)), temp_(std::move(temp)) {}

  ~HierOp() override {
    for (size_t i = current_; i < stages_.size(); ++i)
      if (stages_[i].ticketed && !stages_[i].op) order_.skip(stages_[i].ticket);
  }

  bool step() override {
    while (current_ < stages_.size()) {
      Stage &s = stages_[current_];
      if (!s.op) {
        if (s.ticketed && !order_.is_turn(s.ticket)) return false;
        s.op = s.make();
        if (s.ticketed) order_.started();
      }
      if (!s.op->step()) return false;
      if (s.after) s.after();
      s.op.reset();
      s.ticketed = false;
      ++current_;
    }
    return true;
  }

  void abandon() override {
    for (Stage &s : stages_)
      if (s.op) s.op->abandon();
  }

 private:
  StartOrder &order_;
  std::vector<Stage> stages_;
  std::vector<char> temp_;  // the node's partial shards; sub-operations point into it
  size_t current_ = 0;
};

class Done final : public BackendOp {
 public:
  bool step() override { return true; }
};

class HierBackend final : public Backend {
 public:
  explicit HierBackend(const BackendGroup &group) : group_(group) {
    GroupNodes nodes = group_nodes(*group.context, group.comm);
    if (nodes.ranks_per_node == 0)
      fail(ZRT_ERR_NOT_SUPPORTED,
           "backend hier needs the same number of ranks on every node; the {} nodes of this "
           "communicator hold different numbers",
           nodes.nodes);
    nodes_ = nodes.nodes;
    per_node_ = nodes.ranks_per_node;
    global_.assign(static_cast<size_t>(nodes_ * per_node_), 0);
    for (int r = 0; r < group.size; ++r)
      global_[static_cast<size_t>(nodes.node_of[static_cast<size_t>(r)] * per_node_ +
                                  nodes.local_rank_of[static_cast<size_t>(r)])] = r;
    node_ = nodes.node_of[static_cast<size_t>(group.rank)];
    local_ = nodes.local_rank_of[static_cast<size_t>(group.rank)];
    node_comm_ = MpiComm::split(group.comm, node_, local_, "MPI_Comm_split(node)");
    rail_comm_ = MpiComm::split(group.comm, local_, node_, "MPI_Comm_split(rail)");
    // On a throw the members go in reverse order: the backends before their communicators.
    BackendGroup node{group.context, node_comm_, local_, per_node_, false};
    intra_ = std::make_unique<ShmBackend>(node);
    const std::string choice = group.context->config().get_string("comm.hier.inter");
    BackendGroup rail{group.context, rail_comm_, node_, nodes_, false};
    inter_ = create_network_backend(rail, choice);
    if (group.deterministic) flat_ = create_network_backend(group, choice);
  }

  ~HierBackend() override {
    flat_.reset();
    inter_.reset();
    intra_.reset();
    if (abandoned_) {  // see Backend::abandoned
      rail_comm_.abandon();
      node_comm_.abandon();
    }
  }

  void abandoned() override {
    abandoned_ = true;
    intra_->abandoned();
    inter_->abandoned();
    if (flat_) flat_->abandoned();
  }

  const char *name() const override { return "hier"; }
  // The node's shared buffers: the intra-node reduce-scatter then reads the peers' send
  // buffers in place.
  SharedBuffers *shared_buffers() override { return intra_->shared_buffers(); }

  void check(const CollArgs &a) const override {
    inter_->check(rail_args(a, a.count));
    if (flat_) flat_->check(a);
  }

  void describe(nlohmann::json &out) const override {
    nlohmann::json intra = nlohmann::json::object(), inter = nlohmann::json::object();
    intra_->describe(intra);
    inter_->describe(inter);
    out = {{"nodes", nodes_},
           {"ranks_per_node", per_node_},
           {"intra", {{"backend", intra_->name()}, {"facts", intra}}},
           {"inter", {{"backend", inter_->name()}, {"facts", inter}}}};
    if (flat_) out["deterministic_reductions"] = flat_->name();
  }

  std::unique_ptr<BackendOp> start(const CollArgs &a) override {
    if (a.count == 0) return std::make_unique<Done>();
    const bool reduces = a.kind == CollKind::ReduceScatter || a.kind == CollKind::AllReduce;
    if (flat_ && reduces) return flat_->start(a);

    const int n = group_.size;
    const size_t esize = dtype_size(a.dtype);
    const size_t shard = shard_range(a.count, n, 0).shard;
    const size_t rail_count = static_cast<size_t>(nodes_) * shard;
    std::vector<char> temp;
    if (a.kind != CollKind::Broadcast) temp.resize(rail_count * esize);
    char *t = temp.data();
    std::vector<Stage> stages;
    auto rail_stage = [&](CollArgs sub, std::function<void()> after) {
      Stage s;
      s.ticketed = true;
      s.ticket = order_.take();
      s.make = [this, sub] { return inter_->start(sub); };
      s.after = std::move(after);
      stages.push_back(std::move(s));
    };
    auto shm_stage = [&](std::unique_ptr<BackendOp> op, std::function<void()> after) {
      Stage s;
      s.op = std::move(op);
      s.after = std::move(after);
      stages.push_back(std::move(s));
    };
    const bool avg = a.op == ZRT_OP_AVG;

    switch (a.kind) {
      case CollKind::ReduceScatter: {
        shm_stage(intra_->start_plans(reduce_plan(a, t, shard), std::nullopt), nullptr);
        CollArgs sub = rail_args(a, rail_count);
        sub.kind = CollKind::ReduceScatter;
        sub.send = t;
        sub.recv = a.recv;
        const size_t mine = shard_range(a.count, n, group_.rank).length;
        rail_stage(sub, [a, mine, n, avg] {
          if (avg && mine > 0) divide_buffer(a.recv, mine, a.dtype, n);
        });
        break;
      }
      case CollKind::AllGather: {
        // The rail gathers whole (padded) shards, so this rank's goes into its place first.
        const size_t mine = shard_range(a.count, n, group_.rank).length;
        char *place = t + static_cast<size_t>(node_) * shard * esize;
        if (mine > 0) std::memcpy(place, a.send, mine * esize);
        std::memset(place + mine * esize, 0, (shard - mine) * esize);
        CollArgs sub = rail_args(a, rail_count);
        sub.kind = CollKind::AllGather;
        sub.send = place;
        sub.recv = t;
        rail_stage(sub, nullptr);
        shm_stage(intra_->start_plans(std::nullopt, gather_plan(a, t, shard)), nullptr);
        break;
      }
      case CollKind::AllReduce: {
        shm_stage(intra_->start_plans(reduce_plan(a, t, shard), std::nullopt), nullptr);
        CollArgs sub = rail_args(a, rail_count);
        sub.kind = CollKind::AllReduce;
        sub.send = t;
        sub.recv = t;
        rail_stage(sub, [t, rail_count, dt = a.dtype, n, avg] {
          if (avg) divide_buffer(t, rail_count, dt, n);
        });
        shm_stage(intra_->start_plans(std::nullopt, gather_plan(a, t, shard)), nullptr);
        break;
      }
      case CollKind::Broadcast: {
        const int root_node = node_of(a.root), root_local = local_of(a.root);
        if (local_ == root_local) {
          CollArgs sub = rail_args(a, a.count);
          sub.recv = a.recv;
          sub.root = root_node;
          rail_stage(sub, nullptr);
        }
        CollArgs sub = a;
        sub.root = root_local;
        shm_stage(intra_->start(sub), nullptr);
        break;
      }
    }
    return std::make_unique<HierOp>(order_, std::move(stages), std::move(temp));
  }

 private:
  int node_of(int rank) const {
    for (size_t i = 0; i < global_.size(); ++i)
      if (global_[i] == rank) return static_cast<int>(i) / per_node_;
    return 0;
  }
  int local_of(int rank) const {
    for (size_t i = 0; i < global_.size(); ++i)
      if (global_[i] == rank) return static_cast<int>(i) % per_node_;
    return 0;
  }
  int global(int node, int local) const {
    return global_[static_cast<size_t>(node * per_node_ + local)];
  }

  CollArgs rail_args(const CollArgs &a, size_t count) const {
    CollArgs sub = a;
    sub.count = count;
    sub.op = ZRT_OP_SUM;  // averages divide by the whole group, once, at the end
    return sub;
  }

  // Local rank l's stream is the N shards of rail l, one per node, in node order: shard
  // (k, l) of the whole buffer lands at k * shard of the stream.
  std::vector<ShmPieces> rail_pieces(const CollArgs &a, size_t shard) const {
    std::vector<ShmPieces> pieces(static_cast<size_t>(per_node_));
    for (int l = 0; l < per_node_; ++l)
      for (int k = 0; k < nodes_; ++k) {
        const int g = global(k, l);
        const Shard s = shard_range(a.count, group_.size, g);
        if (s.length > 0)
          pieces[static_cast<size_t>(l)].push_back(
              {static_cast<size_t>(k) * shard, s.offset, s.length});
      }
    return pieces;
  }

  ShmReduceScatterPlan reduce_plan(const CollArgs &a, char *temp, size_t shard) const {
    ShmReduceScatterPlan p;
    p.send = a.send;
    p.out = temp;
    p.stream_length = static_cast<size_t>(nodes_) * shard;
    p.pieces = rail_pieces(a, shard);
    p.zero_gaps = true;  // padding sums to zero along the rail
    p.dtype = a.dtype;
    p.op = ZRT_OP_SUM;
    return p;
  }

  ShmAllGatherPlan gather_plan(const CollArgs &a, const char *temp, size_t shard) const {
    ShmAllGatherPlan p;
    p.src = temp;
    p.recv = a.recv;
    p.stream_length = static_cast<size_t>(nodes_) * shard;
    p.pieces = rail_pieces(a, shard);
    p.copy_own = true;
    p.dtype = a.dtype;
    return p;
  }

  BackendGroup group_;
  int nodes_ = 1, per_node_ = 1, node_ = 0, local_ = 0;
  std::vector<int> global_;        // [node * per_node + local] -> rank
  MpiComm node_comm_, rail_comm_;  // declared before the backends that use them
  std::unique_ptr<ShmBackend> intra_;
  std::unique_ptr<Backend> inter_, flat_;
  StartOrder order_;
  bool abandoned_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_hier_backend(const BackendGroup &group) {
  return std::make_unique<HierBackend>(group);
}

}  // namespace zrt
