/* Small products on one thread.
 *
 * OpenBLAS hands a product of more than 262144 multiply-adds to its threads, and ctorch makes those
 * threads sleep as soon as they have no work (OPENBLAS_THREAD_TIMEOUT,
 * src/startup/before_libraries.c), so each such product wakes them. For the products of a small model that costs more than the
 * thread saves: on 2 cores, the digits MLP's step at batch 32 (products of 32 x 256 x 64) took
 * 59 us with OpenBLAS's threads and 36 us with one (replayed; 63 and 47 us eager), about one
 * context switch per step fewer. A lone product of 64 x 256 x 32 takes as long either way; 128^3
 * (2M) is 44 us on one thread and 31-40 us on two. PyTorch likewise keeps small work on the
 * calling thread (at::parallel_for's grain size).
 *
 * Changing the count is cheap (OpenBLAS keeps its threads) and changes no result: OpenBLAS splits
 * a product's rows and columns between threads, never the sum over k. Its OpenMP build takes its
 * count from OpenMP, whose setting openblas_set_num_threads would change for ctorch's own loops
 * too: that build is left as it is. */
#include <cblas.h>
#include <pthread.h>
#include <stdbool.h>

#include "backend/cpu/cpu_blas_threads.h"

#define OPENBLAS_PTHREADS 1 /* openblas_get_parallel(): 0 sequential, 1 pthreads, 2 OpenMP */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int restore_to; /* the count before a small product set 1; 0: none set */

void ct_cpu_blas_threads_for(int64_t multiply_adds)
{
    if (openblas_get_parallel() != OPENBLAS_PTHREADS) return;
    bool small = multiply_adds < CT_CPU_GEMM_PARALLEL_MIN_WORK;
    pthread_mutex_lock(&lock);
    int now = openblas_get_num_threads();
    if (small && now > 1) {
        restore_to = now;
        openblas_set_num_threads(1);
    } else if (!small && now == 1 && restore_to > 1) {
        openblas_set_num_threads(restore_to);
        restore_to = 0;
    } else if (!small) {
        restore_to = 0; /* the count now is the user's */
    }
    pthread_mutex_unlock(&lock);
}
