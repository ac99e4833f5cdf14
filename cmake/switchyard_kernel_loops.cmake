# The programs that time a compute kernel beside its twin (examples/spmv and
# bench/spmv_mpi, the stencils and stencil_mpi, bench_compute): every loop of
# theirs starts a 64-byte line. Placed by the linker alone, a kernel's inner
# loop crossed a line in some builds and not in others and ran 1.4-1.5 x
# slower where it did, so that the ratio of two programs built from one
# kernel header moved with unrelated changes to either (docs/benchmarks.md,
# "Kernels on a line of their own"). The library itself is left as it is:
# padding before each of its short loops would add to every run.
function(switchyard_align_kernel_loops)
  foreach(target IN LISTS ARGN)
    target_compile_options(${target} PRIVATE -falign-loops=64)
  endforeach()
endfunction()
