/* The DistributedDataParallel benchmark's measurements (bench_ddp.c), sized by a spec so that a
 * test can run them small (tests/distributed/test_bench_ddp.c) and `ctorch bench ddp` large.
 *
 * The model: an MLP of `layers` Linear(width, width) layers with a ReLU between them, MSE loss
 * against a random target, plain SGD; on the CPU. Every rank runs DDP with `batch` rows; rank 0
 * also runs the plain model alone with world size x batch rows (the same global batch) while the
 * other ranks sleep. Collective: every rank calls ct_ddp_bench_run with the same spec, after
 * ct_dist_init. */
#ifndef CT_BENCH_DDP_H
#define CT_BENCH_DDP_H

#include <stdbool.h>
#include <stdint.h>

#define CT_DDP_BENCH_MAX_LAYERS 16

typedef struct ct_ddp_bench_spec {
    int layers, width;
    int batch;               /* rows per rank */
    double bucket_cap_mb;    /* ct_ddp_options.bucket_cap_mb */
    int warmup, repeats;     /* per measurement; medians over repeats */
    double settle_seconds;   /* rank 0's pause after its steps alone (see bench_ddp.c) */
} ct_ddp_bench_spec;

/* Medians, in seconds, and what the run was. */
typedef struct ct_ddp_bench_figures {
    int world, threads_per_rank, threads_alone;
    bool widened_affinity;      /* the launcher had bound this rank to fewer CPUs than the machine's */
    /* A full step (zero_grad, forward, loss, backward, SGD step). */
    double step_ddp;            /* DDP on every rank, batch rows each */
    double step_ddp_at_end;     /* the same with CT_DDP_START_AFTER_BACKWARD */
    double step_no_sync;        /* DDP under no_sync on every rank: no communication */
    double step_alone;          /* rank 0 alone, world x batch rows */
    /* Backward only (the forward before it is not timed). */
    double backward_ddp;        /* through DDP: all-reduces overlap the backward */
    double backward_no_sync;    /* through DDP under no_sync: no communication */
    double all_reduce;          /* ct_dist_all_reduce_async of tensors of the buckets' sizes, in
                                   bucket order, all started then waited for: the communication alone */
    double hidden_fraction;     /* (backward_no_sync + all_reduce - backward_ddp) / all_reduce */
    double last_wait;           /* ct_ddp_stats.last_wait_seconds after each timed DDP backward */
    double last_communication;  /* ct_ddp_stats.last_communication_seconds, likewise */
    int bucket_count;
    int64_t gradient_bytes;
    bool all_reduce_per_bucket; /* false: one flat tensor of gradient_bytes (buckets not found) */
    char error[256];
} ct_ddp_bench_figures;

/* Runs every measurement; false (with out->error) when the setup failed on some rank (then on
 * every rank). A failure in the middle of the timed steps ends the job (ct_dist_abort): the other
 * ranks would wait for this one. */
bool ct_ddp_bench_run(const ct_ddp_bench_spec *spec, ct_ddp_bench_figures *out);

#endif
