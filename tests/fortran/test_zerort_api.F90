! The generated part of the Fortran module: init with a params struct, context query and
! describe, a communicator of our own, posted collectives and requests, agreement, shard
! ranges, checkpoints (save, describe, open, tensors, read, load), the loss scale, weight
! decay per parameter, pools and offload, strings, and errors through ierr.
program test_zerort_api
  use mpi_f08
  use zerort
  use, intrinsic :: iso_c_binding
  implicit none
  type(zrt_context) :: ctx
  type(zrt_init_params) :: init
  type(zrt_context_attr) :: attr
  type(zrt_comm) :: world, comm
  type(zrt_request) :: request
  type(zrt_engine) :: engine, again
  type(zrt_engine_params) :: params
  type(zrt_param) :: w
  type(zrt_checkpoint_params) :: save
  type(zrt_checkpoint) :: ckpt
  type(zrt_checkpoint_tensor_t) :: tensor
  type(zrt_pool) :: pool
  type(zrt_pool_stats_t) :: stats
  type(zrt_offload) :: offload
  type(zrt_offload_token) :: token
  type(zrt_step_report) :: report
  character(len=:), allocatable :: text, backend
  type(c_ptr) :: block
  real(c_float) :: full(10), shard(5), gathered(10), values(6), back(6), fetched(6), got(6)
  real(c_double) :: scale
  real(c_float), pointer :: grad(:)
  integer(c_size_t) :: offset, length, padded
  integer :: rank, size, ierr, count, i, failed, major, minor, patch
  integer(c_int32_t) :: api
  character(len=*), parameter :: path = 'test_zerort_api.h5'

  call MPI_Init()
  init%field_mask = ZRT_INIT_PARAM_FIELD_LOG_LEVEL
  init%log_level = ZRT_LOG_WARN
  call zrt_init(MPI_COMM_WORLD, ctx, init)
  call zrt_context_query(ctx, attr)
  rank = attr%rank
  size = attr%size
  call check(attr%log_level == ZRT_LOG_WARN, 'init params reach the context')
  call zrt_context_describe(ctx, text)
  call check(index(text, '"version"') > 0, 'describe returns the JSON text')
  call zrt_get_version(major, minor, patch, api)
  call check(ishft(api, -16) == 3, 'API version 3')
  call zrt_format_bytes(1536_c_int64_t, text)
  call check(text == '1.5 KiB', 'format_bytes: ' // text)

  ! A communicator of our own over an mpi_f08 communicator, posted collectives, requests.
  call zrt_context_comm(ctx, world)
  call zrt_comm_create(ctx, MPI_COMM_WORLD, comm=comm, params=zrt_comm_params())
  call zrt_comm_backend(comm, backend)
  call check(len(backend) > 0, 'backend name')
  call zrt_shard_range(10, size, rank, offset, length, padded)
  full = [(real(i, c_float), i = 1, 10)]
  call zrt_comm_reduce_scatter_post(comm, full, shard, 10, ZRT_DTYPE_FP32, ZRT_OP_SUM, request)
  call zrt_request_wait(request)
  call zrt_request_free(request)
  do i = 1, int(length)
    call check(shard(i) == real(size * (int(offset) + i), c_float), 'reduce-scatter shard')
  end do
  shard = shard / real(size, c_float)
  call zrt_comm_all_gather(comm, shard, gathered, 10_c_size_t, ZRT_DTYPE_FP32)
  call check(all(gathered == full), 'all-gather of the shards')
  full = 0
  if (rank == 0) full(1) = 7
  call zrt_comm_broadcast(comm, full, 1, ZRT_DTYPE_FP32, 0)
  call check(full(1) == 7, 'broadcast from rank 0')
  call zrt_comm_agree_status(comm, ZRT_SUCCESS, failed)
  call zrt_comm_destroy(comm)

  ! An engine at stage 3, a step, a checkpoint and its tensors, a reload into another.
  params%field_mask = ior(ZRT_ENGINE_PARAM_FIELD_STAGE, ZRT_ENGINE_PARAM_FIELD_LR)
  params%stage = 3
  params%lr = 0.1d0
  call zrt_engine_create(ctx, params, engine)
  call zrt_param_register(engine, 'w', ZRT_DTYPE_FP32, [2, 3], w)
  call zrt_engine_commit(engine)
  call zrt_param_set_weight_decay(engine, w, 0d0)
  values = [(real(i, c_float), i = 1, 6)]
  call zrt_param_set(engine, w, values, ZRT_DTYPE_FP32)
  call zrt_engine_loss_scale(engine, scale)
  call check(scale == 1d0, 'loss scale of fp32 training')
  call zrt_param_gather(engine, w)
  call zrt_param_grad_data(engine, w, grad)
  grad = 1
  call zrt_param_grad_ready(engine, w)
  call zrt_param_release(engine, w)
  call zrt_engine_step(engine, report)
  call check(report%applied == 1, 'the step applied')
  call zrt_param_get(engine, w, back, ZRT_DTYPE_FP32)
  save%field_mask = ZRT_CHECKPOINT_PARAM_FIELD_KEEP_LAST
  save%keep_last = 1
  call zrt_checkpoint_save(engine, path, save)
  call zrt_checkpoint_describe(path, text)
  call check(index(text, '"step"') > 0 .and. index(text, '"stage"') > 0, 'describe: ' // text)
  if (rank == 0) then
    call zrt_checkpoint_open(path, ckpt)
    call zrt_checkpoint_tensor_count(ckpt, count)
    call check(count >= 1, 'tensors in the file')
    do i = 0, count - 1
      call zrt_checkpoint_tensor(ckpt, i, tensor)
      if (zrt_string(tensor%name) == 'params/w') then
        call check(tensor%numel == 6, 'the tensor has 6 elements')
        call zrt_checkpoint_read(ckpt, i, got)
        call check(all(got == back), 'read gives the saved values')
      end if
    end do
    call zrt_checkpoint_close(ckpt)
  end if
  call zrt_engine_create(ctx, params, again)
  call zrt_param_register(again, 'w', ZRT_DTYPE_FP32, [2, 3], w)
  call zrt_engine_commit(again)
  call zrt_checkpoint_load(again, path)
  call zrt_param_get(again, w, got, ZRT_DTYPE_FP32)
  call check(all(got == back), 'load restores the parameters')
  call zrt_checkpoint_load(again, 'no-such-file.h5', ierr)
  call check(ierr == ZRT_ERR_IO, 'a missing checkpoint is an I/O error')
  call zrt_engine_destroy(again)
  call zrt_engine_destroy(engine)

  ! The host pool and the offload ring.
  call zrt_context_pool(ctx, ZRT_MEMORY_HOST, pool)
  call zrt_pool_alloc(pool, 4096, ZRT_LIFETIME_TRANSIENT, block)
  call zrt_pool_stats(pool, stats)
  call check(stats%live_bytes >= 4096, 'pool stats count the block')
  call zrt_pool_free(pool, block)
  call zrt_pool_free(pool, block, ierr)
  call check(ierr /= ZRT_SUCCESS, 'a double free is refused')
  call zrt_context_offload(ctx, offload)
  call zrt_offload_push(offload, values, 24, token)
  call zrt_offload_fetch(offload, token, fetched)
  call check(all(fetched == values), 'offload round trip')

  call zrt_finalize(ctx)
  if (rank == 0) print '(a, i0, a)', 'test_zerort_api: ok on ', size, ' ranks'
  call MPI_Finalize()

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print '(a, i0, 2a)', 'test_zerort_api: rank ', rank, ': FAILED: ', what
      error stop 1
    end if
  end subroutine

end program
