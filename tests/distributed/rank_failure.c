/* A job in which rank 1 fails while rank 0 waits for it in a collective: `exit` makes rank 1
 * exit(1) without leaving the group, `abort` makes it call ct_dist_abort(3). Either way the job
 * must end with a non-zero status soon (tests/distributed/check_job_fails.sh checks). Rank 0
 * would wait forever otherwise, so it reports success only if it ever gets past the collective. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "exit") != 0 && strcmp(argv[1], "abort") != 0)) {
        fprintf(stderr, "usage: rank_failure exit|abort (under mpirun -np 2)\n");
        return 2;
    }
    if (ct_dist_init() != CT_OK || ct_dist_world_size() < 2) {
        fprintf(stderr, "rank_failure: needs a process group of 2 ranks or more: %s\n", ct_last_error_message());
        return 2;
    }
    int64_t shape[1] = {1000};
    ct_tensor *t = ct_ones(shape, 1, CT_F32, CT_DEVICE_CPU);
    /* a first collective that both ranks reach: the failure comes mid-job */
    if (ct_dist_all_reduce(t, CT_REDUCE_SUM) != CT_OK) return 2;
    if (ct_dist_rank() == 1) {
        fprintf(stderr, "rank_failure: rank 1 fails (%s)\n", argv[1]);
        if (strcmp(argv[1], "abort") == 0) ct_dist_abort(3);
        exit(1);
    }
    ct_status status = ct_dist_all_reduce(t, CT_REDUCE_SUM);
    fprintf(stderr, "rank_failure: rank 0 got past the collective (%s): the job did not end\n",
            ct_status_name(status));
    ct_release(t);
    ct_dist_finalize();
    return 0;
}
