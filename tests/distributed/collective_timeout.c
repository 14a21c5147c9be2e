/* Jobs in which rank 1 does not come to rank 0's collective, run under mpirun -np 2 with
 * CTORCH_DIST_TIMEOUT=2 (tests/distributed/check_job_fails.sh checks that the job ends, in bounded
 * time, saying what the ranks print):
 *   stop      rank 1 stops itself (SIGSTOP) after a first collective: rank 0's all-reduce times
 *             out, naming the collective and rank 1, and rank 0 ends the job (ct_dist_abort);
 *   late      rank 1 sleeps past rank 0's limit, then calls the all-reduce: rank 0 times out
 *             naming rank 1, and rank 1's call fails at once, saying that rank 0 gave up;
 *   finalize  rank 1 leaves (ct_dist_finalize) while rank 0 calls the all-reduce: both fail at
 *             once, each naming the other's call, and neither finalises MPI.
 * Each rank prints "collective_timeout: rank R: STATUS: message" for the call that failed. Without
 * the limit, rank 0 would wait for ever in each of them. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctorch.h"

static void report(int rank, ct_status status)
{
    fprintf(stderr, "collective_timeout: rank %d: %s: %s\n", rank, ct_status_name(status), ct_last_error_message());
    fflush(stderr);
}

int main(int argc, char **argv)
{
    const char *mode = argc == 2 ? argv[1] : "";
    if (strcmp(mode, "stop") != 0 && strcmp(mode, "late") != 0 && strcmp(mode, "finalize") != 0) {
        fprintf(stderr, "usage: collective_timeout stop|late|finalize (under mpirun -np 2, CTORCH_DIST_TIMEOUT=2)\n");
        return 2;
    }
    if (ct_dist_init() != CT_OK || ct_dist_world_size() != 2) {
        fprintf(stderr, "collective_timeout: needs a process group of 2 ranks: %s\n", ct_last_error_message());
        return 2;
    }
    int rank = ct_dist_rank();
    ct_tensor *t = ct_ones((int64_t[]){1000}, 1, CT_F32, CT_DEVICE_CPU);
    /* A first collective that both ranks reach: the trouble comes mid-job. */
    if (ct_dist_all_reduce(t, CT_REDUCE_SUM) != CT_OK) return 2;
    if (rank == 1) {
        if (strcmp(mode, "stop") == 0) raise(SIGSTOP);
        if (strcmp(mode, "late") == 0) sleep(5);
        ct_status status = strcmp(mode, "finalize") == 0 ? ct_dist_finalize() : ct_dist_all_reduce(t, CT_REDUCE_SUM);
        report(rank, status);
        exit(3); /* without finalising: the launcher ends the job */
    }
    ct_status status = ct_dist_all_reduce(t, CT_REDUCE_SUM);
    report(rank, status);
    if (status == CT_OK) return 0; /* the job did not fail: check_job_fails.sh says so */
    if (strcmp(mode, "stop") == 0) ct_dist_abort(3);
    /* late, finalize: rank 1 has its say, and ends the job */
    sleep(20);
    return 3;
}
