/* ct_dist_all_reduce (sum) of 1M, 16M and 64M float32 between the ranks of an MPI job, against
 * MPI_Allreduce of a buffer of the same size in the same run; and of an OpenCL tensor, which goes
 * through pinned host staging (reported). Runs under mpirun only (`mpirun -np 2 ctorch bench
 * all_reduce`): bench_runner.c starts the process group and prints rank 0's figures. Every rank
 * makes the same calls in the same order, so the collectives match. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "ctorch.h"

#ifdef CTORCH_HAVE_MPI
#include <mpi.h>

typedef struct all_reduce_case {
    ct_tensor *t;
    float *raw; /* the baseline's buffer */
    int64_t n;
} all_reduce_case;

static void run_ctorch(void *context)
{
    all_reduce_case *c = context;
    ct_dist_all_reduce(c->t, CT_REDUCE_SUM);
}

static void run_mpi(void *context)
{
    all_reduce_case *c = context;
    MPI_Allreduce(MPI_IN_PLACE, c->raw, (int)c->n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds of ctorch's call and of MPI's, timed in alternation (ctorch, MPI, ctorch, ...)
 * so that a busy spell of the machine weighs on both alike. */
static void measure(all_reduce_case *c, int repeats, double *t_ctorch, double *t_mpi)
{
    double *times = malloc(sizeof *times * 2 * (size_t)repeats);
    if (!times) ct_dist_abort(1);
    run_ctorch(c);
    run_mpi(c);
    for (int i = 0; i < repeats; i++) {
        double start = now_seconds();
        run_ctorch(c);
        double middle = now_seconds();
        run_mpi(c);
        times[i] = middle - start;
        times[repeats + i] = now_seconds() - middle;
    }
    qsort(times, (size_t)repeats, sizeof *times, compare_doubles);
    qsort(times + repeats, (size_t)repeats, sizeof *times, compare_doubles);
    *t_ctorch = times[repeats / 2];
    *t_mpi = times[repeats + repeats / 2];
    free(times);
}

static void bench_case(const char *name, int64_t n, ct_device device, int repeats, const char *target,
                       double min_ratio, ct_bench_report report, void *context)
{
    int64_t shape[1] = {n};
    all_reduce_case c = {.n = n};
    size_t bytes = (size_t)n * sizeof(float);
    c.t = ct_ones(shape, 1, CT_F32, device);
    /* page-aligned, as the caching allocator's blocks are, and touched before timing */
    c.raw = aligned_alloc(4096, bytes);
    if (!c.t || !c.raw) {
        fprintf(stderr, "bench %s: setup failed: %s\n", name, ct_last_error_message());
        /* the other ranks go on: end the job rather than leave them waiting */
        ct_dist_abort(1);
    }
    for (int64_t i = 0; i < n; i++) c.raw[i] = 1.0f;
    double t_ctorch, t_mpi;
    measure(&c, repeats, &t_ctorch, &t_mpi);
    ct_bench_result r = {.unit = "GB/s"};
    snprintf(r.name, sizeof r.name, "%s", name);
    r.value = (double)bytes / t_ctorch * 1e-9;
    r.baseline = (double)bytes / t_mpi * 1e-9;
    r.ratio = r.value / r.baseline;
    snprintf(r.target, sizeof r.target, "%s", target);
    r.met = r.ratio >= min_ratio;
    report(&r, context);
    ct_release(c.t);
    free(c.raw);
}

void ct_bench_distributed(const char *filter, ct_bench_report report, void *context)
{
    static const struct {
        const char *name;
        int64_t n;
        int repeats;
    } cases[] = {
        {"all_reduce_f32_1M", 1L << 20, 61},
        {"all_reduce_f32_16M", 16L << 20, 15},
        {"all_reduce_f32_64M", 64L << 20, 7},
    };
    static const char *opencl_name = "all_reduce_f32_16M_opencl";
    bool any = ct_bench_selected(filter, opencl_name);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) any |= ct_bench_selected(filter, cases[i].name);
    if (!any) return;
    if (!ct_dist_is_initialized()) {
        fprintf(stderr, "bench: the all_reduce benchmarks run between MPI processes: "
                        "mpirun -np 2 ctorch bench all_reduce\n");
        return;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (ct_bench_selected(filter, cases[i].name))
            bench_case(cases[i].name, cases[i].n, CT_DEVICE_CPU, cases[i].repeats, "ratio >= 0.9", 0.9,
                       report, context);
    /* Every rank must agree on running it: all or none of them have OpenCL devices. */
    int64_t one[1] = {1};
    ct_tensor *has_opencl = ct_full(one, 1, ct_device_count(CT_OPENCL) > 0, CT_I32, CT_DEVICE_CPU);
    double everywhere = 0;
    if (ct_dist_all_reduce(has_opencl, CT_REDUCE_MIN) == CT_OK) ct_item(has_opencl, &everywhere);
    ct_release(has_opencl);
    ct_device device;
    if (ct_bench_selected(filter, opencl_name) && everywhere > 0 && ct_dist_device_from("opencl", &device) == CT_OK)
        bench_case(opencl_name, 16L << 20, device, 15, "report", 0, report, context);
}

#else

void ct_bench_distributed(const char *filter, ct_bench_report report, void *context)
{
    (void)report;
    (void)context;
    if (ct_bench_selected(filter, "all_reduce"))
        fprintf(stderr, "bench: ctorch was built without MPI: no all_reduce benchmarks\n");
}

#endif
