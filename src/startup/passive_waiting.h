/* What libctorch_passive_waiting set in the environment before the OpenMP runtime and OpenBLAS
 * started (see passive_waiting.c). */
#ifndef CT_STARTUP_PASSIVE_WAITING_H
#define CT_STARTUP_PASSIVE_WAITING_H

#define CT_PASSIVE_SET_OMP_WAIT_POLICY 1         /* OMP_WAIT_POLICY=passive */
#define CT_PASSIVE_SET_OPENBLAS_THREAD_TIMEOUT 2 /* OPENBLAS_THREAD_TIMEOUT=4 */

/* A mask of the CT_PASSIVE_SET_* variables it set; 0 where the user had set them all. */
int ct_passive_waiting_set(void);

#endif
