/* ct_dist_all_reduce (sum) of 1M, 16M and 64M float32 between the ranks of an MPI job, against
 * MPI_Allreduce of a buffer of the same size in the same run; and of an OpenCL tensor, which goes
 * through pinned host staging (reported). Runs under mpirun only (`mpirun -np 2 ctorch bench
 * all_reduce`): bench_runner.c starts the process group and prints rank 0's figures. Every rank
 * makes the same calls in the same order, so the collectives match. The figure is the
 * algorithm bandwidth: the tensor's bytes over the call's time. */
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
    float *data; /* t's own elements: MPI's baseline reduces the very same buffer */
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
    MPI_Allreduce(MPI_IN_PLACE, c->data, (int)c->n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

/* One call, started together on every rank (a barrier first), so that one rank's lateness from
 * the previous call is not counted in the next. */
static double timed_call(void (*fn)(void *), all_reduce_case *c)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double start = ct_bench_now_seconds();
    fn(c);
    return ct_bench_now_seconds() - start;
}

/* Median seconds of ctorch's call and of MPI's, in pairs whose order alternates (ctorch first,
 * then MPI first), so that neither always runs right after the other or on a busier spell of
 * the machine. */
static void measure(all_reduce_case *c, int repeats, double *t_ctorch, double *t_mpi)
{
    double *times = malloc(sizeof *times * 2 * (size_t)repeats);
    if (!times) ct_dist_abort(1);
    run_ctorch(c);
    run_mpi(c);
    for (int i = 0; i < repeats; i++) {
        if (i % 2 == 0) {
            times[i] = timed_call(run_ctorch, c);
            times[repeats + i] = timed_call(run_mpi, c);
        } else {
            times[repeats + i] = timed_call(run_mpi, c);
            times[i] = timed_call(run_ctorch, c);
        }
    }
    *t_ctorch = ct_bench_median(times, repeats);
    *t_mpi = ct_bench_median(times + repeats, repeats);
    free(times);
}

/* name: ct_dist_all_reduce of n float32 on device against MPI_Allreduce of the same bytes on the
 * host (for a device tensor: of a host buffer of the same size, as MPI cannot read the device). */
static void bench_case(const char *name, int64_t n, ct_device device, int repeats, const char *target,
                       double min_ratio, ct_bench_report report, void *context)
{
    int64_t shape[1] = {n};
    all_reduce_case c = {.n = n};
    size_t bytes = (size_t)n * sizeof(float);
    c.t = ct_ones(shape, 1, CT_F32, device);
    ct_tensor *host = device.type == CT_CPU ? ct_retain(c.t) : ct_ones(shape, 1, CT_F32, CT_DEVICE_CPU);
    if (!c.t || !host) {
        fprintf(stderr, "bench %s: setup failed: %s\n", name, ct_last_error_message());
        /* the other ranks go on: end the job rather than leave them waiting */
        ct_dist_abort(1);
    }
    c.data = (float *)ct_data_ptr(host);
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
    ct_release(host);
}

void ct_bench_distributed(const char *filter, ct_bench_report report, void *context)
{
    static const struct {
        const char *name;
        int64_t n;
        int repeats;
    } cases[] = {
        {"all_reduce_f32_1M", 1L << 20, 60},
        {"all_reduce_f32_16M", 16L << 20, 16},
        {"all_reduce_f32_64M", 64L << 20, 8},
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
        bench_case(opencl_name, 16L << 20, device, 16, "report", 0, report, context);
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
