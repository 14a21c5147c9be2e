/* How many of OpenBLAS's threads a product uses (cpu_blas_threads.c). */
#ifndef CT_CPU_BLAS_THREADS_H
#define CT_CPU_BLAS_THREADS_H

#include <stdint.h>

/* Below this many multiply-adds a product runs on the calling thread alone. */
#define CT_CPU_GEMM_PARALLEL_MIN_WORK ((int64_t)1 << 20)

/* Before a product of m x n x k multiply-adds (each matrix of a batch): OpenBLAS's thread count
 * set for it, 1 below CT_CPU_GEMM_PARALLEL_MIN_WORK, else the count it had (the user's choice,
 * OPENBLAS_NUM_THREADS, or the cores). Only OpenBLAS's pthreads build is changed. A count the user
 * sets with openblas_set_num_threads between products stands, but for 1 set right after a small
 * product (which ctorch set to 1 itself): the next large product takes the count before. */
void ct_cpu_blas_threads_for(int64_t multiply_adds);

#endif
