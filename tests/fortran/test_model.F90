! The module's models (zerort/model.h, where zerort is built with libzerort_nn): Fortran
! arrays of rank 2 and 3 passed with their dimensions reversed (the batch last), the same
! values through type(zrt_tensor), a training step without the loss argument, the external
! loss's forward_train and backward_step, the generated query, describe and export, and
! wrong shapes refused with a message that says the shape in Fortran's order.
program test_model
  use mpi_f08
  use zerort
  use, intrinsic :: iso_c_binding
  implicit none
  character(len=*), parameter :: tail = &
      '"loss": {"type": "mse"}, "seed": 7, ' // &
      '"optimizer": {"type": "AdamW", "params": {"lr": 0.05, "weight_decay": 0}}, ' // &
      '"zero_optimization": {"stage": 3}}'
  type(zrt_context) :: ctx
  type(zrt_model) :: flat, planes, external
  type(zrt_model_info) :: info
  type(zrt_tensor) :: tin, tout
  real(c_float), target :: x(3, 5), y(4, 5), z(4, 5), x3(3, 2, 5), y3(4, 2, 5), t(4, 5)
  real(c_float), target :: wrong(4, 5), batch_first(5, 3), sample(3), a(4, 3)
  real(c_double) :: loss, first
  character(len=:), allocatable :: text
  integer :: rank, ranks, ierr, i, j, b

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, ranks)
  call zrt_init(MPI_COMM_WORLD, ctx)
  ! The same linear layer (no bias) on a 3-vector, and on each of 2 rows of 3 (C shape
  ! {batch, 2, 3}): the same seed and sizes give the same weights.
  call zrt_model_create(ctx, '{"model": {"input": [3], "layers": [{"type": "linear", ' // &
                        '"features": 4, "bias": false}]}, ' // tail, flat)
  call zrt_model_create(ctx, '{"model": {"input": [2, 3], "layers": [{"type": "linear", ' // &
                        '"features": 4, "bias": false}]}, ' // tail, planes)
  call zrt_model_query(flat, info)
  call check(info%input_ndim == 1 .and. info%input_shape(1) == 3, 'query: input (3)')
  call check(info%output_ndim == 1 .and. info%output_shape(1) == 4, 'query: output (4)')
  call check(info%stage == 3 .and. info%parameters == 12, 'query: stage 3, 12 parameters')
  call zrt_model_describe(flat, text)
  call check(index(text, 'linear') > 0, 'describe names the layer: ' // text)

  ! Rank 2: x(features, batch); each column is a sample.
  do b = 1, 5
    do i = 1, 3
      x(i, b) = real(sin(real(rank * 100 + b * 3 + i)), c_float)
    end do
  end do
  call zrt_model_forward(flat, x, y)
  do b = 1, 5
    sample = x(:, b)
    call zrt_model_forward(flat, sample, z(:, 1), ierr)
    call check(ierr == ZRT_ERR_INVALID_ARGUMENT, 'a sample without its batch dimension is refused')
    call zrt_model_forward(flat, x(:, b:b), z(:, b:b))
  end do
  call check(all(abs(z - y) <= 1e-6 * (1 + abs(y))), 'a column alone gives its column of the batch')
  ! Rank 3: x3(features, rows, batch) is C's {batch, rows, features}.
  do b = 1, 5
    do j = 1, 2
      x3(:, j, b) = x(:, b) * j
    end do
  end do
  call zrt_model_forward(planes, x3, y3)
  do j = 1, 2
    call check(all(abs(y3(:, j, :) - y * j) <= 1e-5 * (1 + abs(y))), 'rank 3: the rows of a sample')
  end do
  ! The same through type(zrt_tensor), as C passes it.
  tin%data = c_loc(x)
  tin%dtype = ZRT_DTYPE_FP32
  tin%ndim = 2
  tin%shape(1:2) = [5, 3]
  tout = tin
  tout%data = c_loc(z)
  tout%shape(1:2) = [5, 4]
  z = 0
  call zrt_model_forward(flat, tin, tout)
  call check(all(z == y), 'type(zrt_tensor) gives what the arrays give')

  ! Training towards t = a x: the loss falls; the loss argument may be left out.
  a = reshape([(real(i, c_float) / 12, i = 1, 12)], [4, 3])
  t = matmul(a, x)
  call zrt_model_train_step(flat, x, t, first)
  do i = 1, 30
    call zrt_model_train_step(flat, x, t)
  end do
  call zrt_model_train_step(flat, x, t, loss)
  call check(loss < first / 2, 'training lowers the loss')
  call zrt_model_query(flat, info)
  call check(info%optimizer_steps == 32, 'every step counted')

  ! Wrong shapes: refused on every rank, the message in Fortran's order too.
  call zrt_model_train_step(flat, wrong, t, loss, ierr)
  call check(ierr == ZRT_ERR_INVALID_ARGUMENT, 'x(4, batch) for input (3) is refused')
  text = zrt_last_error_message()
  call check(index(text, 'from Fortran, the batch is the last dimension') > 0 .and. &
             index(text, 'this rank passed input(4,5) and target(4,5)') > 0 .and. &
             index(text, 'the model takes input(3,batch) and gives output(4,batch)') > 0, &
             'the message says the shapes in Fortran order: ' // text)
  call zrt_model_forward(flat, batch_first, y, ierr)
  call check(ierr == ZRT_ERR_INVALID_ARGUMENT, 'x(batch, features) is refused')
  text = zrt_last_error_message()
  call check(index(text, 'input(5,3)') > 0 .and. index(text, 'input(3,batch)') > 0, &
             'the message shows the array the wrong way round: ' // text)
  call zrt_model_forward(planes, x, y, ierr)
  call check(ierr == ZRT_ERR_INVALID_ARGUMENT, 'rank 2 for a rank 3 model is refused')
  call check(index(zrt_last_error_message(), 'input(3,2,batch)') > 0, &
             'the rank 3 model in Fortran order: ' // zrt_last_error_message())
  if (rank == ranks - 1) then
    call zrt_model_forward(flat, x(:, 1:4), y, ierr)  ! this rank's batches differ
  else
    call zrt_model_forward(flat, x, y, ierr)
  end if
  call check(ierr /= ZRT_SUCCESS, 'output batch 5 for input batch 4 fails every rank')

  ! A loss of the program's own: forward_train, then the gradient of 0.5 |y - t|^2.
  call zrt_model_create(ctx, '{"model": {"input": [3], "layers": [{"type": "linear", ' // &
                        '"features": 4}]}, "seed": 3, "loss": {"type": "external"}, ' // &
                        tail(index(tail, '"optimizer"'):), external)
  call zrt_model_backward_step(external, y, ierr)
  call check(ierr == ZRT_ERR_INVALID_STATE, 'backward_step needs forward_train first')
  call zrt_model_train_step(external, x, t, loss, ierr)
  call check(ierr == ZRT_ERR_INVALID_STATE, 'train_step refuses an external loss')
  do i = 1, 20
    call zrt_model_forward_train(external, x, y)
    if (i == 1) first = sum((y - t)**2)
    call zrt_model_backward_step(external, (y - t) / 5)
  end do
  call zrt_model_forward(external, x, y)
  call check(sum((y - t)**2) < first, 'forward_train and backward_step lower the loss')
  call zrt_model_forward_train(external, x, batch_first, ierr)
  call check(ierr == ZRT_ERR_INVALID_ARGUMENT .and. &
             index(zrt_last_error_message(), 'output(4,batch)') > 0, 'forward_train checks output')

  call zrt_model_destroy(external)
  call zrt_model_destroy(planes)
  call zrt_model_destroy(flat)
  call zrt_finalize(ctx)
  if (rank == 0) print '(a, i0, a)', 'test_model: ok on ', ranks, ' ranks'
  call MPI_Finalize()

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print '(a, i0, 2a)', 'test_model: rank ', rank, ': FAILED: ', what
      error stop 1
    end if
  end subroutine

end program
