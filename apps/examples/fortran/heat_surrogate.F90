! A surrogate learned while a solver runs, in Fortran with `use zerort` (zerort/model.h):
! the 2-D reaction-diffusion equation
!     u_t = alpha (u_xx + u_yy) + k u (1 - u)
! on the periodic unit square, n x n points, explicit finite differences, its rows split
! among the ranks (halo rows exchanged with mpi_f08). A first run with the exact reaction
! term collects, at every point and step, the 5-point stencil and the term there; an MLP
! (zrt_model, ZeRO stage 3, its parameters sharded over the ranks) trains on them, each
! rank on its own points. A second run, from another initial state, takes the term from
! the model (zrt_model_forward on every local point, each step) and is compared with the
! exact solver.
!   heat_surrogate [CONFIG]   CONFIG: a model configuration file (default: the one below)
program heat_surrogate
  use mpi_f08
  use zerort
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: n = 32, collect_steps = 100, train_steps = 1500, batch = 256
  integer, parameter :: run_steps = 200
  real(c_double), parameter :: alpha = 0.01d0, k = 1d0, dt = 0.01d0, h = 1d0 / n
  real(c_double), parameter :: pi = acos(-1d0)
  ! The model's output is the term scaled to [0, 1] (k u (1 - u) is at most k / 4).
  real(c_double), parameter :: scale = k / 4
  character(len=*), parameter :: default_config = &
      '{"model": {"input": [5], "layers": [' // &
      '{"type": "linear", "features": 32}, {"type": "tanh"}, ' // &
      '{"type": "linear", "features": 32}, {"type": "tanh"}, ' // &
      '{"type": "linear", "features": 1}]}, ' // &
      '"loss": {"type": "mse"}, "seed": 1, ' // &
      '"optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "weight_decay": 0}}, ' // &
      '"lr_scheduler": {"type": "cosine_annealing", "parameters": {"T_max": 1500}}, ' // &
      '"zero_optimization": {"stage": 3}}'
  type(zrt_context) :: ctx
  type(zrt_model) :: model
  character(len=4096) :: config
  real(c_double), allocatable :: exact(:, :), learned(:, :), none(:, :), zero(:, :)
  real(c_float), allocatable :: xs(:, :), ys(:, :), xb(:, :), yb(:, :), sx(:, :), sy(:, :)
  real(c_double) :: loss, sums(3)
  integer :: rank, ranks, m, step, i, j, s, samples
  integer(c_int64_t) :: lcg
  character(len=16) :: text

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, ranks)
  if (mod(n, ranks) /= 0) then
    if (rank == 0) print '(a, i0, a)', 'heat_surrogate: the ', n, ' rows do not split evenly'
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end if
  m = n / ranks  ! this rank's rows (columns of u(:, 1:m); 0 and m + 1 are the halo)
  config = default_config
  if (command_argument_count() >= 1) call get_command_argument(1, config)
  call zrt_init(MPI_COMM_WORLD, ctx)
  call zrt_model_create(ctx, trim(config), model)

  ! 1. The exact solver, collecting (stencil, term / scale) at every point and step.
  allocate(exact(n, 0:m + 1), learned(n, 0:m + 1), none(n, 0:m + 1))
  samples = collect_steps * n * m
  allocate(xs(5, samples), ys(1, samples))
  call initial(exact, 1)
  s = 0
  do step = 1, collect_steps
    call halo(exact)
    do j = 1, m
      do i = 1, n
        s = s + 1
        xs(:, s) = real(stencil(exact, i, j), c_float)
        ys(1, s) = real(reaction(exact(i, j)) / scale, c_float)
      end do
    end do
    call advance(exact, exact_term(exact))
  end do

  ! 2. Training: each rank's batch drawn from its own samples.
  allocate(xb(5, batch), yb(1, batch))
  lcg = 12345 + rank
  do step = 1, train_steps
    do i = 1, batch
      lcg = modulo(lcg * 1103515245_c_int64_t + 12345_c_int64_t, 2147483648_c_int64_t)
      s = 1 + int(modulo(lcg / 16, int(samples, c_int64_t)))
      xb(:, i) = xs(:, s)
      yb(:, i) = ys(:, s)
    end do
    call zrt_model_train_step(model, xb, yb, loss)
  end do
  if (rank == 0) then
    write (text, '(es9.2)') loss
    print '(a, i0, a, i0, a, i0, 2a)', 'heat_surrogate: ', ranks, ' ranks, ', samples, &
        ' samples each, ', train_steps, ' steps at ZeRO stage 3, loss ', trim(lower(adjustl(text)))
  end if

  ! 3. From another initial state: the exact term, the model's, and none at all.
  allocate(sx(5, n * m), sy(1, n * m), zero(n, m))
  zero = 0
  call initial(exact, 2)
  learned = exact
  none = exact
  do step = 1, run_steps
    call halo(exact)
    call halo(learned)
    call halo(none)
    s = 0
    do j = 1, m
      do i = 1, n
        s = s + 1
        sx(:, s) = real(stencil(learned, i, j), c_float)
      end do
    end do
    call zrt_model_forward(model, sx, sy)
    call advance(exact, exact_term(exact))
    call advance(learned, reshape(scale * real(sy(1, :), c_double), [n, m]))
    call advance(none, zero)
  end do
  sums = [sum((learned(:, 1:m) - exact(:, 1:m))**2), sum((none(:, 1:m) - exact(:, 1:m))**2), &
          sum(exact(:, 1:m)**2)]
  call MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) then
    write (text, '(es9.2)') sqrt(sums(1) / sums(3))
    print '(a, a, a, i0, a)', 'surrogate error: ', trim(lower(adjustl(text))), &
        ' relative (L2) after ', run_steps, ' steps'
    write (text, '(es9.2)') sqrt(sums(2) / sums(3))
    print '(a, a, a)', 'heat_surrogate: without the reaction term the error is ', &
        trim(lower(adjustl(text))), ' (L2)'
  end if

  call zrt_model_destroy(model)
  call zrt_finalize(ctx)
  call MPI_Finalize()

contains

  ! Two initial states in [0.02, 0.98] (which = 1: the training run's).
  subroutine initial(u, which)
    real(c_double), intent(out) :: u(n, 0:m + 1)
    integer, intent(in) :: which
    real(c_double) :: x, y
    integer :: i, j
    u = 0
    do j = 1, m
      y = (rank * m + j - 1) * h
      do i = 1, n
        x = (i - 1) * h
        if (which == 1) then
          u(i, j) = 0.5d0 + 0.48d0 * sin(2 * pi * x) * sin(2 * pi * y)
        else
          u(i, j) = 0.5d0 + 0.3d0 * cos(2 * pi * (x + y)) + 0.1d0 * sin(4 * pi * y)
        end if
      end do
    end do
  end subroutine

  ! The halo rows from the neighbouring ranks (periodic in y; one rank sends to itself).
  subroutine halo(u)
    real(c_double), intent(inout) :: u(n, 0:m + 1)
    integer :: up, down
    up = modulo(rank + 1, ranks)
    down = modulo(rank - 1, ranks)
    call MPI_Sendrecv(u(:, m), n, MPI_DOUBLE_PRECISION, up, 0, u(:, 0), n, &
                      MPI_DOUBLE_PRECISION, down, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call MPI_Sendrecv(u(:, 1), n, MPI_DOUBLE_PRECISION, down, 1, u(:, m + 1), n, &
                      MPI_DOUBLE_PRECISION, up, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  end subroutine

  ! The 5-point stencil at (i, j): centre, west, east, south, north (periodic in x).
  function stencil(u, i, j) result(v)
    real(c_double), intent(in) :: u(n, 0:m + 1)
    integer, intent(in) :: i, j
    real(c_double) :: v(5)
    v = [u(i, j), u(modulo(i - 2, n) + 1, j), u(modulo(i, n) + 1, j), u(i, j - 1), u(i, j + 1)]
  end function

  elemental function reaction(u) result(r)
    real(c_double), intent(in) :: u
    real(c_double) :: r
    r = k * u * (1 - u)
  end function

  function exact_term(u) result(r)
    real(c_double), intent(in) :: u(n, 0:m + 1)
    real(c_double) :: r(n, m)
    r = reaction(u(:, 1:m))
  end function

  ! One explicit step with the reaction term r (halo rows current).
  subroutine advance(u, r)
    real(c_double), intent(inout) :: u(n, 0:m + 1)
    real(c_double), intent(in) :: r(n, m)
    real(c_double) :: v(5), next(n, m)
    integer :: i, j
    do j = 1, m
      do i = 1, n
        v = stencil(u, i, j)
        next(i, j) = v(1) + dt * (alpha * (v(2) + v(3) + v(4) + v(5) - 4 * v(1)) / h**2 + r(i, j))
      end do
    end do
    u(:, 1:m) = next
  end subroutine

  function lower(s) result(t)
    character(len=*), intent(in) :: s
    character(len=len(s)) :: t
    integer :: i
    t = s
    do i = 1, len(t)
      if (t(i:i) >= 'A' .and. t(i:i) <= 'Z') t(i:i) = achar(iachar(t(i:i)) + 32)
    end do
  end function

end program heat_surrogate
