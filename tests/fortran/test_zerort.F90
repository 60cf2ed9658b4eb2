! The Fortran module end to end: init from mpi_f08, an all-reduce (on private and on
! zrt_comm_mem_alloc'd buffers), an engine that fits a
! 4x3 parameter to a target at stage 2, typed views, and the error path with ierr.
program test_zerort
  use mpi_f08
  use zerort
  use, intrinsic :: iso_c_binding
  implicit none
  type(zrt_context) :: ctx
  type(zrt_comm) :: comm
  type(zrt_engine) :: engine
  type(zrt_engine_params) :: params
  type(zrt_param) :: w, extra
  type(zrt_step_report) :: report
  type(zrt_memory_report) :: mem
  real(c_float), pointer :: value(:), grad(:), matrix(:, :), shared(:)
  type(c_ptr) :: shared_ptr
  real(c_float) :: x(5), y(5), init(12), final(12), target(12)
  integer :: rank, size, ierr, step, i

  call MPI_Init()
  call zrt_init(MPI_COMM_WORLD, ctx)
  call zrt_context_comm(ctx, comm)
  call zrt_comm_rank(comm, rank)
  call zrt_comm_size(comm, size)

  x = real(rank + 1, c_float)
  call zrt_comm_all_reduce(comm, x, y, 5, ZRT_DTYPE_FP32, ZRT_OP_SUM)
  call check(all(y == real(size * (size + 1) / 2, c_float)), 'all-reduce sum')

  ! 300000 floats: above comm.shm.direct_bytes, so shm sums straight from the peers.
  call zrt_comm_mem_alloc(comm, int(4 * 300000, c_size_t), shared_ptr)
  call c_f_pointer(shared_ptr, shared, [300000])
  shared = real(rank + 1, c_float)
  call zrt_comm_all_reduce(comm, shared, shared, 300000, ZRT_DTYPE_FP32, ZRT_OP_SUM)
  call check(all(shared == real(size * (size + 1) / 2, c_float)), 'all-reduce on shared memory')
  call zrt_comm_mem_free(comm, shared_ptr)
  call zrt_comm_mem_free(comm, shared_ptr, ierr)
  call check(ierr == ZRT_ERR_INVALID_ARGUMENT, 'double free reported')

  params%field_mask = ior(ZRT_ENGINE_PARAM_FIELD_STAGE, ZRT_ENGINE_PARAM_FIELD_LR)
  params%stage = 2
  params%lr = 0.25d0
  call zrt_engine_create(ctx, params, engine)
  call zrt_param_register(engine, 'w', ZRT_DTYPE_FP32, [4, 3], w)
  call zrt_engine_commit(engine)
  init = 0
  call zrt_param_set(engine, w, init, ZRT_DTYPE_FP32)
  target = [(real(i, c_float), i = 1, 12)]
  do step = 1, 300
    call zrt_param_data(engine, w, value)
    call zrt_param_grad_data(engine, w, grad)
    grad = grad + (value - target)
    call zrt_param_grad_ready(engine, w)
    call zrt_engine_step(engine, report)
  end do
  call check(report%applied == 1 .and. report%step == 300, 'step report')
  call zrt_param_get(engine, w, final, ZRT_DTYPE_FP32)
  call check(maxval(abs(final - target)) < 0.05, 'the engine fits the target')
  ! The flat view remaps to the registered Fortran shape.
  call zrt_param_data(engine, w, value)
  matrix(1:4, 1:3) => value
  call check(abs(matrix(4, 3) - 12.0) < 0.05, 'column-major view')
  call zrt_engine_memory(engine, mem)
  call check(mem%parameter_count == 12, 'memory report')

  ! Errors come back in ierr with a message, and nothing stops.
  call zrt_param_register(engine, 'late', ZRT_DTYPE_FP32, [2], extra, ierr)
  call check(ierr == ZRT_ERR_INVALID_STATE, 'register after commit is an error')
  call check(index(zrt_last_error_message(), 'committed') > 0, 'the message says why')
  call check(zrt_status_string(ierr) == 'invalid state', 'status string')

  call zrt_engine_destroy(engine)
  call zrt_finalize(ctx)
  if (rank == 0) print '(a, i0, a)', 'test_zerort: ok on ', size, ' ranks'
  call MPI_Finalize()

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print '(a, i0, 2a)', 'test_zerort: rank ', rank, ': FAILED: ', what
      error stop 1
    end if
  end subroutine

end program
