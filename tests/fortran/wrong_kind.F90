! Must not compile: zrt_checkpoint_read takes real(c_float) values, not real(c_double).
! (The fortran_wrong_kind test expects the compiler's type mismatch.)
subroutine wrong_kind(ckpt)
  use zerort
  use, intrinsic :: iso_c_binding
  implicit none
  type(zrt_checkpoint), intent(in) :: ckpt
  real(c_double) :: values(6)
  call zrt_checkpoint_read(ckpt, 0, values)
end subroutine
