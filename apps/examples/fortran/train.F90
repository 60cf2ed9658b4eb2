! zerort from Fortran, built with find_package(zerort COMPONENTS fortran): a linear model
! y = W x trained at ZeRO stage 3 with AdamW, checkpointed, and continued from the
! checkpoint on any number of ranks.
!   train STEPS CHECKPOINT            train from scratch, then save
!   train STEPS CHECKPOINT resume     load, train STEPS more, save
program train
  use mpi_f08
  use zerort
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: n_out = 4, n_in = 3, batch = 8
  type(zrt_context) :: ctx
  type(zrt_comm) :: world
  type(zrt_engine) :: engine
  type(zrt_engine_params) :: params
  type(zrt_param) :: w
  type(zrt_step_report) :: report
  type(zrt_memory_report) :: mem
  real(c_float), pointer :: value(:), grad(:), wm(:, :), gm(:, :)
  real(c_float) :: x(n_in, batch), y(n_out, batch), truth(n_out, n_in), err(n_out, batch)
  real(c_float) :: loss(1), zeros(n_out * n_in)
  character(len=256) :: arg, path
  integer :: rank, size, steps, step, i, j
  logical :: resume

  call MPI_Init()
  call get_command_argument(1, arg)
  read (arg, *) steps
  call get_command_argument(2, path)
  call get_command_argument(3, arg)
  resume = trim(arg) == 'resume'

  call zrt_init(MPI_COMM_WORLD, ctx)
  call zrt_context_comm(ctx, world)
  call zrt_comm_rank(world, rank)
  call zrt_comm_size(world, size)

  params%field_mask = ior(ior(ZRT_ENGINE_PARAM_FIELD_STAGE, ZRT_ENGINE_PARAM_FIELD_OPTIMIZER), &
                          ior(ZRT_ENGINE_PARAM_FIELD_LR, ZRT_ENGINE_PARAM_FIELD_WEIGHT_DECAY))
  params%stage = 3
  params%optimizer = ZRT_OPTIMIZER_ADAMW
  params%lr = 0.05d0
  params%weight_decay = 0d0
  call zrt_engine_create(ctx, params, engine)
  call zrt_param_register(engine, 'w', ZRT_DTYPE_FP32, [n_out, n_in], w)
  call zrt_engine_commit(engine)
  if (resume) then
    call zrt_checkpoint_load(engine, trim(path))
  else
    zeros = 0
    call zrt_param_set(engine, w, zeros, ZRT_DTYPE_FP32)
  end if

  truth = reshape([(real(i, c_float) / 4, i = 1, n_out * n_in)], [n_out, n_in])
  do step = 1, steps
    ! Each rank's own batch: inputs that depend on the rank and the step.
    do j = 1, batch
      do i = 1, n_in
        x(i, j) = sin(real(rank * 1000 + step * batch + j * n_in + i, c_float))
      end do
    end do
    y = matmul(truth, x)
    call zrt_param_gather(engine, w)
    call zrt_param_data(engine, w, value)
    call zrt_param_grad_data(engine, w, grad)
    wm(1:n_out, 1:n_in) => value
    gm(1:n_out, 1:n_in) => grad
    err = matmul(wm, x) - y
    gm = gm + matmul(err, transpose(x)) / batch
    loss(1) = sum(err**2) / (2 * batch)
    call zrt_param_grad_ready(engine, w)
    call zrt_param_release(engine, w)
    call zrt_engine_step(engine, report)
    call zrt_comm_all_reduce(world, loss, loss, 1, ZRT_DTYPE_FP32, ZRT_OP_AVG)
    if (rank == 0 .and. (step == 1 .or. step == steps)) &
        print '(a, i0, a, es10.3)', 'train: step ', report%step, ' loss ', loss(1)
  end do
  call zrt_engine_memory(engine, mem)
  call zrt_checkpoint_save(engine, trim(path))
  if (rank == 0) print '(a, i0, a, i0, 2a)', 'train: ', size, ' ranks, ', mem%parameters, &
      ' parameter bytes per rank, saved ', trim(path)
  call zrt_engine_destroy(engine)
  call zrt_finalize(ctx)
  call MPI_Finalize()
end program
