/* What libctorch_startup set in the environment before the OpenMP runtime and OpenBLAS started
 * (see before_libraries.c). */
#ifndef CT_STARTUP_BEFORE_LIBRARIES_H
#define CT_STARTUP_BEFORE_LIBRARIES_H

#include <stdbool.h>

/* libgomp's spin count before a waiting thread sleeps (before_libraries.c says why). */
#define CT_STARTUP_SPIN "1000"

#define CT_STARTUP_SET_GOMP_SPINCOUNT 1          /* GOMP_SPINCOUNT=CT_STARTUP_SPIN */
#define CT_STARTUP_SET_OPENBLAS_THREAD_TIMEOUT 2 /* OPENBLAS_THREAD_TIMEOUT=4 */
#define CT_STARTUP_SET_OPENBLAS_CORETYPE 4       /* OPENBLAS_CORETYPE, from the CPU's extensions */
#define CT_STARTUP_SET_OPENBLAS_NUM_THREADS 8    /* 1, under a tight limit on the address space */
#define CT_STARTUP_SET_POCL_MAX_PTHREAD_COUNT 16  /* 1, under a tight limit on the address space */

/* A mask of the CT_STARTUP_SET_* variables it set; 0 where the user had set them all. */
int ct_startup_environment_set(void);
/* Whether the process started under a limit on its address space (ulimit -v, -d) that left less
 * than 4 GiB: its libraries then keep to few threads, and the CPU's products to OpenBLAS. */
bool ct_startup_address_space_tight(void);
/* The OPENBLAS_CORETYPE it set ("SkylakeX"), or NULL where it set none. */
const char *ct_startup_openblas_coretype(void);

#endif
