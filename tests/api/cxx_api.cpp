// zerort.hpp against the library, at np 2: each group of members is used as a program uses
// it and its results are checked (the values of collectives, a parameter's round trip, a
// checkpoint loaded back equal to what was saved), not only that the calls return.
#include <mpi.h>
#include <zerort/zerort.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

int g_rank = 0;
int g_failures = 0;

#define EXPECT(cond)                                                                           \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "rank %d: %s:%d: failed: %s\n", g_rank, __FILE__, __LINE__, #cond); \
      ++g_failures;                                                                            \
    }                                                                                          \
  } while (0)

bool contains(const std::string &text, const std::string &part) {
  const bool found = text.find(part) != std::string::npos;
  if (!found)
    std::fprintf(stderr, "rank %d: '%s' not in: %.300s\n", g_rank, part.c_str(), text.c_str());
  return found;
}

void free_functions() {
  const zrt::version_info v = zrt::get_version();
  EXPECT(v.api_version == static_cast<uint32_t>(ZRT_API_VERSION));
  EXPECT(zrt::format_bytes(17) == "17 B");
  EXPECT(zrt::format_bytes(3ull << 29) == "1.5 GiB");
  EXPECT(contains(zrt::config_schema(), "comm.backend"));
  EXPECT(zrt::status_string(ZRT_ERR_IO) == zrt_status_string(ZRT_ERR_IO));
  EXPECT(zrt::dtype_size(ZRT_DTYPE_BF16) == 2 && zrt::dtype_size(ZRT_DTYPE_FP64) == 8);
  const zrt::shard_info s = zrt::shard_range(10, 3, 2);
  EXPECT(s.shard == 4 && s.offset == 8 && s.length == 2);
  const std::vector<float> in = {1.0f, -2.0f, 0.5f, 3.0f};
  std::vector<uint16_t> half(in.size());
  std::vector<float> back(in.size());
  zrt::dtype_convert(std::span<const float>(in), ZRT_DTYPE_FP32, std::span<uint16_t>(half),
                     ZRT_DTYPE_BF16);
  zrt::dtype_convert(std::span<const uint16_t>(half), ZRT_DTYPE_BF16, std::span<float>(back),
                     ZRT_DTYPE_FP32);
  EXPECT(back == in);
  try {
    zrt::shard_range(10, 0, 0);
    EXPECT(!"shard_range over 0 ranks did not throw");
  } catch (const zrt::error &e) {
    EXPECT(e.status() == ZRT_ERR_INVALID_ARGUMENT);
    EXPECT(contains(zrt::last_error_message(), "nranks"));
  }
}

void context_members(zrt::context &ctx) {
  const zrt_context_attr_t attr = ctx.query();
  EXPECT(attr.field_mask == ZRT_CONTEXT_ATTR_FIELD_ALL);
  int rank = -1, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT(attr.rank == rank && attr.size == size && attr.local_size >= 1);
  const std::string text = ctx.describe();
  EXPECT(!text.empty() && text.front() == '{' && text.back() == '}');
  const zrt_memory_limit_t limit = ctx.memory_limit();
  EXPECT(limit.limit_bytes > 0 && limit.sharing_ranks >= 1);
  const std::string isa = ctx.optimizer_isa();
  EXPECT(isa == "avx512" || isa == "avx2" || isa == "scalar");

  // One Adam step by hand: m = 0.1 g, v = 0.001 g^2, bias-corrected to g and g^2, so the
  // update is lr * g / |g| = lr.
  zrt_adam_args_t args{};
  args.field_mask = ZRT_ADAM_ARG_FIELD_LR | ZRT_ADAM_ARG_FIELD_STEP;
  args.lr = 0.1;
  args.step = 1;
  std::vector<float> w(8, 1.0f), m(8, 0.0f), v(8, 0.0f), g(8, 0.5f);
  ctx.optimizer_adam(args, w, m, v, g);
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT(std::fabs(w[i] - 0.9f) < 1e-5f);
    EXPECT(std::fabs(m[i] - 0.05f) < 1e-7f);
  }
  std::vector<uint16_t> g16(8);
  zrt::dtype_convert(std::span<const float>(g), ZRT_DTYPE_FP32, std::span<uint16_t>(g16),
                     ZRT_DTYPE_BF16);
  std::fill(w.begin(), w.end(), 1.0f);
  std::fill(m.begin(), m.end(), 0.0f);
  std::fill(v.begin(), v.end(), 0.0f);
  ctx.optimizer_adam(args, w, m, v, g16, ZRT_DTYPE_BF16);
  EXPECT(std::fabs(w[0] - 0.9f) < 1e-5f);
}

void comm_members(zrt::context &ctx) {
  zrt::comm world = ctx.comm();
  const int n = world.size(), r = world.rank();
  EXPECT(!world.backend().empty());
  constexpr size_t kCount = 10;
  const double ranks_sum = n * (n - 1) / 2.0;

  std::vector<double> send(kCount), recv(kCount);
  for (size_t i = 0; i < kCount; ++i)
    send[i] = r + static_cast<double>(i);
  world.all_reduce(std::span<const double>(send), std::span<double>(recv));
  for (size_t i = 0; i < kCount; ++i)
    EXPECT(recv[i] == n * static_cast<double>(i) + ranks_sum);

  std::vector<float> inout(kCount, static_cast<float>(r + 1));
  zrt::request req = world.all_reduce_post(std::span<float>(inout), ZRT_OP_AVG);
  req.wait();
  for (float x : inout)
    EXPECT(x == (n + 1) / 2.0f);

  std::vector<double> again(kCount);
  world.all_reduce_post(std::span<const double>(send), std::span<double>(again)).wait();
  EXPECT(again == recv);

  const zrt::shard_info s = zrt::shard_range(kCount, n, r);
  std::vector<double> shard(s.shard), shard_posted(s.shard);
  world.reduce_scatter(std::span<const double>(send), std::span<double>(shard));
  zrt::request rs =
      world.reduce_scatter_post(std::span<const double>(send), std::span<double>(shard_posted));
  while (!rs.test()) {
  }
  rs.wait();
  for (size_t i = 0; i < s.length; ++i) {
    EXPECT(shard[i] == recv[s.offset + i]);
    EXPECT(shard_posted[i] == recv[s.offset + i]);
  }

  // A shard too small for this rank's part is refused before anything is posted (on
  // every rank alike: the shards are equal).
  std::vector<double> small(s.shard - 1);
  try {
    world.reduce_scatter(std::span<const double>(send), std::span<double>(small));
    EXPECT(!"reduce_scatter into a short shard did not throw");
  } catch (const zrt::error &e) {
    EXPECT(e.status() == ZRT_ERR_INVALID_ARGUMENT);
  }

  std::vector<double> gathered(kCount), gathered_posted(kCount);
  std::span<const double> mine(shard.data(), s.length);
  world.all_gather(mine, std::span<double>(gathered));
  world.all_gather_post(mine, std::span<double>(gathered_posted)).wait();
  EXPECT(gathered == recv);
  EXPECT(gathered_posted == recv);

  std::vector<int32_t> root_values(4, r == 0 ? 42 : -1);
  world.broadcast(std::span<int32_t>(root_values), 0);
  for (int32_t x : root_values)
    EXPECT(x == 42);
  std::vector<double> from_last(3, r == n - 1 ? 2.5 : 0.0);
  world.broadcast_post(std::span<double>(from_last), n - 1).wait();
  for (double x : from_last)
    EXPECT(x == 2.5);

  // Agreement: the last rank fails, every rank learns it (the answer, not an exception).
  const zrt::agreement ok = world.agree_status(ZRT_SUCCESS);
  EXPECT(ok.status == ZRT_SUCCESS && ok.failed_rank == -1);
  const zrt::agreement bad = world.agree_status(r == n - 1 ? ZRT_ERR_IO : ZRT_SUCCESS);
  EXPECT(bad.status == ZRT_ERR_IO && bad.failed_rank == n - 1);
  EXPECT(contains(bad.message, "rank " + std::to_string(n - 1)));

  // Memory for collectives, on a communicator of our own.
  zrt_comm_params_t params{};
  params.field_mask = ZRT_COMM_PARAM_FIELD_DETERMINISTIC;
  params.deterministic = 1;
  zrt::comm own = zrt::comm::create(ctx.get(), MPI_COMM_WORLD, &params);
  EXPECT(own.size() == n && own.rank() == r);
  std::span<std::byte> mem = own.mem_alloc(kCount * sizeof(float));
  std::span<float> floats(reinterpret_cast<float *>(mem.data()), kCount);
  for (float x : floats)
    EXPECT(x == 0.0f);
  std::fill(floats.begin(), floats.end(), static_cast<float>(r + 1));
  own.all_reduce(floats);
  for (float x : floats)
    EXPECT(x == n * (n + 1) / 2.0f);
  own.mem_free(mem);
  own.destroy();
}

void pool_members(zrt::context &ctx) {
  zrt::pool host = ctx.pool();
  {
    zrt::pool_block block = host.alloc(1000, ZRT_LIFETIME_LONG);
    std::memset(block.data(), 7, block.size());
    EXPECT(host.stats().live_bytes >= 1000);
  }

  zrt_pool_params_t params{};
  params.field_mask = ZRT_POOL_PARAM_FIELD_LIMIT_BYTES | ZRT_POOL_PARAM_FIELD_SEGMENT_BYTES |
                      ZRT_POOL_PARAM_FIELD_NAME;
  params.limit_bytes = 16 << 20;
  params.segment_bytes = 1 << 20;
  params.name = "cxx_api";
  zrt::pool pool = zrt::pool::create(ctx.get(), &params);
  zrt::pool_block block = pool.alloc(1000, ZRT_LIFETIME_LONG);
  std::span<int> ints = block.as<int>(250);
  for (size_t i = 0; i < ints.size(); ++i)
    ints[i] = static_cast<int>(i);
  zrt_pool_stats_t stats = pool.stats();
  EXPECT(stats.field_mask == ZRT_POOL_STATS_FIELD_ALL);
  EXPECT(stats.allocations == 1 && stats.live_bytes >= 1000 && stats.limit_bytes == 16 << 20);
  block.free();
  EXPECT(pool.stats().allocations == 0);

  {
    zrt::pool_block hole = pool.alloc(4096, ZRT_LIFETIME_LONG);
    zrt::pool_buffer buffer = pool.alloc_movable(4096, ZRT_LIFETIME_LONG);
    zrt::buffer_location at = buffer.pointer();
    EXPECT(at.bytes == 4096 && at.ptr != nullptr);
    std::memset(at.ptr, 0x5a, at.bytes);
    void *locked = buffer.lock();
    EXPECT(locked == buffer.pointer().ptr);
    buffer.unlock();
    hole.free();
    (void)pool.defragment();
    at = buffer.pointer();
    const auto *bytes = static_cast<const unsigned char *>(at.ptr);
    EXPECT(bytes[0] == 0x5a && bytes[4095] == 0x5a);
    EXPECT(pool.stats().movable_allocations == 1);
    buffer.free();
  }
  (void)pool.trim();
  EXPECT(pool.stats().allocations == 0);
  pool.destroy();
}

void offload_members(zrt::context &ctx) {
  zrt::offload own_ctx = ctx.offload();
  EXPECT(std::string(own_ctx.stats().engine).size() > 0);

  zrt_offload_params_t params{};
  params.field_mask = ZRT_OFFLOAD_PARAM_FIELD_RING_BYTES;
  params.ring_bytes = 1 << 20;
  zrt::offload off = zrt::offload::create(ctx.get(), &params);
  std::vector<float> src(1000), dst(1000);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<float>(i) * 0.25f;
  const std::vector<float> original = src;

  zrt::offload_token a = off.push(std::span<const float>(src));
  a.wait();
  EXPECT(a.test());
  std::fill(src.begin(), src.end(), -1.0f);  // the ring holds the copy now
  a.fetch(std::span<float>(dst));
  EXPECT(dst == original);

  zrt::offload_token b = off.push(original.data(), original.size() * sizeof(float));
  b.prefetch();
  std::fill(dst.begin(), dst.end(), 0.0f);
  b.fetch(dst.data());
  EXPECT(dst == original);

  zrt::offload_token c = off.push(std::span<const float>(original));
  std::fill(dst.begin(), dst.end(), 0.0f);
  c.prefetch_into(dst.data());
  c.fetch(std::span<float>(dst));
  EXPECT(dst == original);

  zrt::offload_token d = off.push(std::span<const float>(original));
  EXPECT(d.size() == original.size() * sizeof(float));
  d.discard();

  const zrt_offload_stats_t stats = off.stats();
  EXPECT(stats.pushes == 4 && stats.fetches == 3 && stats.discards == 1 && stats.tokens == 0);
  EXPECT(stats.ring_bytes >= 1 << 20);
  off.destroy();
}

std::string shared_dir(zrt::comm &world) {
  double pid = world.rank() == 0 ? static_cast<double>(getpid()) : 0.0;
  world.broadcast(std::span<double>(&pid, 1), 0);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("zrt_cxx_api_" + std::to_string(static_cast<long>(pid)));
  if (world.rank() == 0) std::filesystem::create_directories(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  return dir.string();
}

void engine_members(zrt::context &ctx) {
  zrt::comm world = ctx.comm();
  const int n = world.size(), r = world.rank();
  const std::string dir = shared_dir(world);

  zrt_engine_params_t params{};
  params.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_OPTIMIZER |
                      ZRT_ENGINE_PARAM_FIELD_LR | ZRT_ENGINE_PARAM_FIELD_MOMENTUM;
  params.stage = 2;
  params.optimizer = ZRT_OPTIMIZER_SGD;
  params.lr = 0.5;
  params.momentum = 0.0;
  zrt::engine engine(ctx.get(), params);
  zrt_param_h w = engine.param_register("w", ZRT_DTYPE_FP32, {3, 4});
  const std::vector<int64_t> b_shape = {5};
  zrt_param_h b = engine.param_register("b", ZRT_DTYPE_FP32, b_shape);
  EXPECT(engine.param_count() == 2 && engine.param_at(1) == b);
  const zrt_param_info_t info = engine.param_info(w);
  EXPECT(std::string(info.name) == "w" && info.ndim == 2 && info.shape[0] == 3 &&
         info.shape[1] == 4 && info.numel == 12 && info.dtype == ZRT_DTYPE_FP32);
  engine.commit();
  try {
    engine.param_register("late", ZRT_DTYPE_FP32, {2});
    EXPECT(!"param_register after commit did not throw");
  } catch (const zrt::error &e) {
    EXPECT(e.status() == ZRT_ERR_INVALID_STATE);
  }

  // A round trip: set, then get and the compute copy.
  std::vector<float> w0(12), b0(5);
  for (size_t i = 0; i < w0.size(); ++i)
    w0[i] = static_cast<float>(i);
  for (size_t i = 0; i < b0.size(); ++i)
    b0[i] = -static_cast<float>(i);
  engine.param_set(w, w0);
  engine.param_set(b, b0);
  EXPECT(engine.param_get(w) == w0);
  std::vector<float> b_read(5);
  engine.param_get(b, b_read);
  EXPECT(b_read == b0);
  std::span<float> w_data = engine.param_data(w);
  EXPECT(std::vector<float>(w_data.begin(), w_data.end()) == w0);
  engine.param_set_weight_decay(b, 0.0);
  engine.set_stream(nullptr);
  EXPECT(engine.loss_scale() == 1.0);
  EXPECT(contains(engine.describe(), "\"stage\":2"));

  // The memory an engine planned for this machine would hold.
  zrt_plan_params_t machine{};
  machine.field_mask = ZRT_PLAN_PARAM_FIELD_NRANKS | ZRT_PLAN_PARAM_FIELD_RANKS_PER_NODE |
                       ZRT_PLAN_PARAM_FIELD_SHARED_WINDOW;
  machine.nranks = n;
  machine.ranks_per_node = ctx.query().local_size;
  machine.shared_window = world.backend() == "shm" || world.backend() == "hier";
  zrt::plan plan(&params, &machine);
  plan.add_param("w", {3, 4});
  plan.add_param("b", b_shape);
  const zrt_memory_report_t planned = plan.memory(), held = engine.memory();
  EXPECT(held.parameter_count == 17 && planned.parameter_count == 17);
  EXPECT(planned.parameters == held.parameters && planned.gradients == held.gradients &&
         planned.optimizer_state == held.optimizer_state);
  if (planned.total != held.total)
    std::fprintf(stderr, "rank %d: planned total %lld, engine %lld\n", r,
                 static_cast<long long>(planned.total), static_cast<long long>(held.total));
  EXPECT(planned.total == held.total);
  EXPECT(plan.gathered_bytes() == 0);
  const zrt_plan_comm_t planned_comm = plan.comm();
  EXPECT(planned_comm.reduce_scatter_calls >= 1 && planned_comm.all_reduce_calls == 0);
  plan.destroy();

  // One step: rank k's gradient is k + 1, the engine averages them, SGD subtracts lr times
  // the average.
  engine.param_gather(w);  // stage 2: nothing to do
  engine.param_release(w);
  {
    std::span<float> grad = engine.param_grad_data(b);
    std::fill(grad.begin(), grad.end(), static_cast<float>(r + 1));
    engine.param_grad_ready(b);
    // Stage 2 hands out a fresh bucket buffer each micro-step: backward overwrites it.
    const auto [w_grad, write] = engine.param_grad_buffer(w);
    EXPECT(write == ZRT_GRAD_WRITE_OVERWRITE && w_grad.size() == 12);
    std::fill(w_grad.begin(), w_grad.end(), static_cast<float>(r + 1));
    engine.param_grad_ready(w);
  }
  const zrt_step_report_t report = engine.step();
  EXPECT(report.field_mask == ZRT_STEP_REPORT_FIELD_ALL);
  EXPECT(report.applied == 1 && report.step == 1 && report.lr == 0.5);
  EXPECT(report.comm_reduce_scatter_bytes == planned_comm.reduce_scatter_bytes);
  const float delta = 0.5f * (n + 1) / 2.0f;
  std::vector<float> w1(12);
  for (size_t i = 0; i < w1.size(); ++i)
    w1[i] = w0[i] - delta;
  EXPECT(engine.param_get(w) == w1);
  w_data = engine.param_data(w);
  EXPECT(std::vector<float>(w_data.begin(), w_data.end()) == w1);
  engine.set_lr(0.25);

  // Checkpoints: a blocking save, a posted one, the description, a load.
  const std::string saved = dir + "/saved.h5", posted = dir + "/posted.h5";
  zrt_checkpoint_params_t ck{};
  ck.field_mask = ZRT_CHECKPOINT_PARAM_FIELD_METADATA;
  ck.metadata = "{\"from\":\"cxx_api\"}";
  engine.checkpoint_save(saved, &ck);
  zrt::request save = engine.checkpoint_save_post(posted);
  save.wait();
  const std::string about = zrt::checkpoint_describe(saved);
  EXPECT(contains(about, "\"step\":1"));
  EXPECT(contains(about, "cxx_api"));
  EXPECT(contains(zrt::checkpoint_describe(posted), "\"step\":1"));

  engine.param_set(w, std::vector<float>(12, 0.0f));
  engine.checkpoint_load(saved);
  EXPECT(engine.param_get(w) == w1);

  // The file without an engine: find params/w, read it, verify its checksum.
  {
    zrt::checkpoint_file file = zrt::checkpoint_file::open(posted);
    const int count = file.tensor_count();
    EXPECT(count >= 2);
    int found = 0;
    for (int i = 0; i < count; ++i) {
      const zrt_checkpoint_tensor_t t = file.tensor(i);
      if (std::string(t.name) != "params/w") continue;
      ++found;
      EXPECT(t.ndim == 2 && t.shape[0] == 3 && t.shape[1] == 4 && t.numel == 12);
      EXPECT(t.has_checksum == 1);
      EXPECT(file.read(i) == w1);
      std::vector<float> into(12);
      file.read(i, into);
      EXPECT(into == w1);
      EXPECT(file.verify(i));
    }
    EXPECT(found == 1);
    file.close();
  }

  // A weights-only file written by rank 0, loaded by every rank.
  const std::string written = dir + "/written.h5";
  const std::vector<float> sevens(12, 7.0f), bias = {1, 2, 3, 4, 5};
  if (r == 0) {
    zrt::checkpoint_file out = zrt::checkpoint_file::create(written, "{\"writer\":\"cxx\"}");
    out.write("w", {3, 4}, sevens);
    out.write("b", b_shape, bias);
    out.close();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  engine.checkpoint_load(written);
  EXPECT(engine.param_get(w) == sevens);
  EXPECT(engine.param_get(b) == bias);
  EXPECT(contains(zrt::checkpoint_describe(written), "writer"));

  engine.destroy();
  MPI_Barrier(MPI_COMM_WORLD);
  if (r == 0) std::filesystem::remove_all(dir);
}

// zrt::model: a configured model trained, run, saved and described through the wrapper; a
// span of the wrong size is refused before the C call.
void model_members(zrt::context &ctx) {
  zrt::model model(ctx, R"({"model": {"input": [2], "layers": [{"type": "linear", "features": 1}]},
                            "optimizer": {"type": "SGD", "params": {"lr": 0.01}}, "seed": 2})");
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, y = {3, 7, 11, 15};  // y = x0 + x1
  double first = 0, loss = 0;
  for (int step = 0; step < 30; ++step) {
    loss = model.train_step(x, {4, 2}, y, {4, 1});
    if (step == 0) first = loss;
  }
  EXPECT(loss < first);
  std::vector<float> out(4);
  model.forward(x, {4, 2}, out, {4, 1});
  EXPECT(model.query().optimizer_steps == 30 && model.query().parameters == 3);
  EXPECT(contains(model.describe(), "linear 2 -> 1"));
  try {
    model.forward(x, {4, 3}, out, {4, 1});
    EXPECT(false);
  } catch (const zrt::error &e) {
    EXPECT(e.status() == ZRT_ERR_INVALID_ARGUMENT && contains(e.what(), "buffer sizes differ"));
  }
  try {
    model.forward(x, {2, 4}, out, {2, 2});
    EXPECT(false);
  } catch (const zrt::error &e) {
    EXPECT(e.status() == ZRT_ERR_INVALID_ARGUMENT && contains(e.what(), "expected 2"));
  }
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  try {
    zrt::context ctx(MPI_COMM_WORLD);
    free_functions();
    context_members(ctx);
    comm_members(ctx);
    pool_members(ctx);
    offload_members(ctx);
    engine_members(ctx);
    model_members(ctx);
    ctx.finalize();
  } catch (const zrt::error &e) {
    std::fprintf(stderr, "rank %d: zrt::error %s: %s\n", g_rank, zrt_status_string(e.status()),
                 e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("cxx_api: %s (%d failed checks)\n", failures ? "FAILED" : "ok", failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
