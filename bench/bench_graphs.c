/* Captured and replayed training steps (ctorch/graph.h) against the same steps run eagerly: the
 * digits MLP of `ctorch train` (64 -> 256 -> 10, batch 32, plain SGD) on the CPU and on --device
 * (or the first accelerator). Three figures per device:
 *   graph_step_digits_<device>      steps/s replayed against eager, waiting for the device (the
 *                                   CPU's target: a replayed step >= 1.3x the eager one, issue 16)
 *   graph_host_us_digits_<device>   host microseconds to issue one step, replayed against eager
 *                                   (what a GPU's launch latency hides behind, or not)
 *   graph_launches_digits_<device>  launches a step makes (kernels and BLAS calls), replayed
 *                                   against eager: the ones re-issued where the backend records
 *                                   them (the CPU, OpenCL), one graph launch on CUDA */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "bench_accelerator.h"
#include "bench_training.h"

typedef struct graph_run {
    ct_mlp_ctorch mlp;
    ct_graph *graph;
    bool failed;
} graph_run;

static void eager_step(void *context)
{
    graph_run *r = context;
    if (!r->failed && !ct_mlp_ctorch_step(&r->mlp, NULL)) {
        fprintf(stderr, "bench graph: %s\n", r->mlp.error);
        r->failed = true;
    }
}

static void replayed_step(void *context)
{
    graph_run *r = context;
    if (!r->failed && ct_graph_replay(r->graph) != CT_OK) {
        fprintf(stderr, "bench graph: replay: %s\n", ct_last_error_message());
        r->failed = true;
    }
}

ct_graph *ct_bench_capture_step(void (*step)(void *), void *context, ct_device device)
{
    step(context);
    ct_graph *graph = ct_graph_new();
    if (graph && ct_graph_begin(graph, device, NULL) == CT_OK) {
        step(context); /* recorded, not run */
        if (ct_graph_end(graph) == CT_OK) return graph;
    }
    ct_graph_free(graph);
    return NULL;
}

/* Median seconds per step of a and of b, waiting for the device, timed in turn run by run (each
 * run `calls` steps): on a machine shared with other jobs, both meet the same load. */
static void time_in_turn(void (*a)(void *), void (*b)(void *), graph_run *r, ct_device device, int calls,
                         int repeats, double *t_a, double *t_b)
{
    double times[2][101];
    if (repeats > 101) repeats = 101;
    for (int i = 0; i < repeats; i++)
        for (int k = 0; k < 2; k++) {
            double start = ct_bench_now_seconds();
            for (int c = 0; c < calls; c++) (k ? b : a)(r);
            ct_synchronize(device);
            times[k][i] = (ct_bench_now_seconds() - start) / calls;
        }
    *t_a = ct_bench_median(times[0], repeats);
    *t_b = ct_bench_median(times[1], repeats);
}

/* Host seconds per call of fn, the device's work excluded: calls in a row, then a wait. */
static double host_seconds(void (*fn)(void *), graph_run *r, ct_device device, int calls, int repeats)
{
    double times[31];
    if (repeats > 31) repeats = 31;
    for (int i = 0; i < repeats; i++) {
        double start = ct_bench_now_seconds();
        for (int c = 0; c < calls; c++) fn(r);
        times[i] = (ct_bench_now_seconds() - start) / calls;
        ct_synchronize(device);
    }
    return ct_bench_median(times, repeats);
}

/* Launches per call of fn (ct_device_kernel_launches: kernels and BLAS calls, a graph launch
 * counting one). */
static double launches_per_step(void (*fn)(void *), graph_run *r, ct_device device)
{
    uint64_t before = 0, after = 0;
    ct_device_kernel_launches(device, &before);
    fn(r);
    ct_synchronize(device);
    ct_device_kernel_launches(device, &after);
    return (double)(after - before);
}

static void report_row(const char *kind, ct_device device, const char *unit, double value, double baseline,
                       double ratio, double min_ratio, ct_bench_report report, void *context)
{
    ct_bench_result r = {.unit = unit, .value = value, .baseline = baseline, .ratio = ratio};
    char name[CT_DEVICE_STRING_MAX];
    ct_device_format(device, name, sizeof name);
    for (char *c = name; *c; c++)
        if (*c == ':') *c = '_';
    snprintf(r.name, sizeof r.name, "graph_%s_digits_%s", kind, name);
    ct_bench_set_device(&r, device);
    if (min_ratio > 0) {
        snprintf(r.target, sizeof r.target, "ratio >= %.1f", min_ratio);
        r.met = ratio >= min_ratio;
    } else {
        snprintf(r.target, sizeof r.target, "report");
        r.met = true;
    }
    report(&r, context);
}

static void bench_device(ct_device device, const char *filter, ct_bench_report report, void *context)
{
    static const ct_mlp_spec digits = {2, {64, 256, 10}, 32, 0.05};
    graph_run run = {0};
    bool quick = ct_bench_config_get()->quick;
    if (!ct_mlp_ctorch_init(&run.mlp, &digits, device, 1)) {
        fprintf(stderr, "bench graph: %s\n", run.mlp.error);
        ct_mlp_ctorch_free(&run.mlp);
        return;
    }
    run.graph = ct_bench_capture_step(eager_step, &run, device);
    if (!run.graph || run.failed) {
        fprintf(stderr, "bench graph: capture on the device failed: %s\n", ct_last_error_message());
    } else {
        double eager_launches = launches_per_step(eager_step, &run, device);
        double replay_launches = launches_per_step(replayed_step, &run, device);
        if (ct_bench_selected(filter, "graph_launches_digits"))
            report_row("launches", device, "launches", replay_launches, eager_launches,
                       replay_launches > 0 ? eager_launches / replay_launches : 0.0, 0, report, context);
        if (ct_bench_selected(filter, "graph_step_digits")) {
            double replayed, eager;
            for (int i = 0; i < 3; i++) replayed_step(&run), eager_step(&run);
            time_in_turn(replayed_step, eager_step, &run, device, 10, quick ? 3 : 101, &replayed, &eager);
            double target = device.type == CT_CPU ? 1.3 : 0.0;
            if (!run.failed)
                report_row("step", device, "steps/s", 1.0 / replayed, 1.0 / eager, eager / replayed, target, report,
                           context);
        }
        if (ct_bench_selected(filter, "graph_host_us_digits")) {
            double eager = host_seconds(eager_step, &run, device, 20, quick ? 3 : 31);
            double replayed = host_seconds(replayed_step, &run, device, 20, quick ? 3 : 31);
            if (!run.failed)
                report_row("host_us", device, "us", replayed * 1e6, eager * 1e6, replayed > 0 ? eager / replayed : 0.0,
                           0, report, context);
        }
    }
    ct_graph_free(run.graph);
    ct_mlp_ctorch_free(&run.mlp);
}

void ct_bench_graphs(const char *filter, ct_bench_report report, void *context)
{
    if (!ct_bench_selected(filter, "graph_step_digits") && !ct_bench_selected(filter, "graph_host_us_digits") &&
        !ct_bench_selected(filter, "graph_launches_digits"))
        return;
    bench_device(CT_DEVICE_CPU, filter, report, context);
    ct_device device = ct_bench_config_get()->device;
    if (device.type == CT_CPU && !ct_bench_accelerator(&device)) return;
    bench_device(device, filter, report, context);
}
