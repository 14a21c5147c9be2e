/* What libctorch_startup set in the environment before the OpenMP runtime and OpenBLAS started
 * (see before_libraries.c). */
#ifndef CT_STARTUP_BEFORE_LIBRARIES_H
#define CT_STARTUP_BEFORE_LIBRARIES_H

#define CT_STARTUP_SET_OMP_WAIT_POLICY 1         /* OMP_WAIT_POLICY=passive */
#define CT_STARTUP_SET_OPENBLAS_THREAD_TIMEOUT 2 /* OPENBLAS_THREAD_TIMEOUT=4 */
#define CT_STARTUP_SET_OPENBLAS_CORETYPE 4       /* OPENBLAS_CORETYPE, from the CPU's extensions */

/* A mask of the CT_STARTUP_SET_* variables it set; 0 where the user had set them all. */
int ct_startup_environment_set(void);
/* The OPENBLAS_CORETYPE it set ("SkylakeX"), or NULL where it set none. */
const char *ct_startup_openblas_coretype(void);

#endif
