/* ctorch benchmarks: each compares a ctorch call with the raw library or loop underneath, in the
 * same run, and reports the ratio (ctorch speed / baseline speed: 1.0 means no overhead). */
#ifndef CT_BENCH_H
#define CT_BENCH_H

#include <stdbool.h>
#include <stdio.h>

typedef struct ct_bench_result {
    char name[64];
    double value;        /* ctorch's figure, in unit */
    double baseline;     /* the raw library's figure, in unit, measured in the same run */
    const char *unit;    /* "GFLOP/s", "GB/s", "us" */
    double ratio;        /* ctorch speed / baseline speed */
    char target[32];     /* the figure to reach, e.g. "ratio >= 0.95" or "value <= 1 us" */
    bool met;
} ct_bench_result;

typedef void (*ct_bench_report)(const ct_bench_result *result, void *context);

/* Seconds on a monotonic clock. */
double ct_bench_now_seconds(void);
/* The median of count values (count > 0); sorts them. */
double ct_bench_median(double *values, int count);

/* Median seconds per call of fn(context) over `repeats` calls, after `warmup` calls. */
double ct_bench_time(void (*fn)(void *), void *context, int warmup, int repeats);

/* Times ours and baseline (each over `repeats` calls after `warmup`, twice, interleaved so that
 * clock drift affects both alike) and fills r's value and baseline as work / seconds, the ratio,
 * and the target ratio >= min_ratio. */
void ct_bench_compare(ct_bench_result *r, void (*ours)(void *), void (*baseline)(void *),
                      void *context, int warmup, int repeats, double work, double min_ratio);

/* Each benchmark group reports one result per measurement. */
void ct_bench_matmul(const char *filter, ct_bench_report report, void *context);
void ct_bench_elementwise(const char *filter, ct_bench_report report, void *context);
void ct_bench_overhead(const char *filter, ct_bench_report report, void *context);
/* MLP training steps against a hand-written C + OpenBLAS step, and warm steps' allocations. */
void ct_bench_training(const char *filter, ct_bench_report report, void *context);
/* On the first accelerator device (skipped where there is none). */
void ct_bench_transfer(const char *filter, ct_bench_report report, void *context);
void ct_bench_device_ops(const char *filter, ct_bench_report report, void *context);
/* Between the ranks of an MPI job (under mpirun; skipped with a note otherwise). */
void ct_bench_distributed(const char *filter, ct_bench_report report, void *context);
/* DistributedDataParallel: a training step with DDP on every rank against one process with the
 * same global batch, and how much of the communication backward hides (under mpirun; skipped
 * with a note otherwise). */
void ct_bench_ddp(const char *filter, ct_bench_report report, void *context);
/* A training step over two devices of the first accelerator type against one (skipped without
 * two devices). */
void ct_bench_data_parallel(const char *filter, ct_bench_report report, void *context);

/* Does `name` pass the command line's filter (a substring; NULL passes all)? */
bool ct_bench_selected(const char *filter, const char *name);

/* `ctorch bench` and `ctorch-bench`: [--json] [FILTER]. Returns the exit status. Under mpirun
 * (a launcher world size above 1) it runs the distributed benchmarks alone, on every rank, and
 * rank 0 prints. */
int ct_bench_main(int argc, char **argv);

#endif
