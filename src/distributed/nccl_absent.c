/* Built instead of nccl_backend.c when NCCL is not (no CUDA backend or no nccl.h at build time, or
 * CTORCH_WITH_NCCL=OFF): CUDA tensors' collectives go through MPI with host staging. */
#include <pthread.h>
#include <stdio.h>

#include "distributed/dist_internal.h"

#define WITHOUT_NCCL "ctorch was built without NCCL (the CUDA backend or nccl.h was not there at build " \
                     "time, or CTORCH_WITH_NCCL was OFF)"

static pthread_once_t logged = PTHREAD_ONCE_INIT;

static void log_reason(void)
{
    ct_log_message(CT_LOG_INFO, "ct_dist: CUDA tensors' collectives go through MPI with host staging, not "
                   "NCCL: %s", WITHOUT_NCCL);
}

bool ct_dist_nccl_usable(char *reason, size_t reason_size)
{
    pthread_once(&logged, log_reason);
    if (reason && reason_size) snprintf(reason, reason_size, "%s", WITHOUT_NCCL);
    return false;
}

bool ct_dist_nccl_library_load(int *version, char *reason, size_t reason_size)
{
    if (version) *version = 0;
    if (reason && reason_size) snprintf(reason, reason_size, "%s", WITHOUT_NCCL);
    return false;
}

void ct_dist_nccl_finalize(void) {}
