/* Timing for every benchmark group: a monotonic clock, medians, ctorch timed beside its
 * baseline, and the run's settings (--device, --quick, --big). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

static ct_bench_config settings = {.device = {CT_CPU, 0}, .quick = false, .big = -1};

const ct_bench_config *ct_bench_config_get(void) { return &settings; }
void ct_bench_config_set(const ct_bench_config *config) { settings = *config; }

bool ct_bench_big_sizes(ct_device device)
{
    if (settings.big >= 0) return settings.big == 1;
    if (settings.quick) return false;
    size_t free_bytes = 0, total_bytes = 0;
    if (ct_mem_get_info(device, &free_bytes, &total_bytes) != CT_OK) return false;
    if (total_bytes < ((size_t)CT_BENCH_BIG_MIN_GIB << 30)) return false;
    if (device.type == CT_CPU) {
        ct_device_props props;
        if (ct_get_device_properties(device, &props) != CT_OK || props.compute_units < CT_BENCH_BIG_MIN_CPUS)
            return false;
    }
    return true;
}

double ct_bench_now_seconds(void)
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

double ct_bench_median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, compare_doubles);
    return count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
}

/* --quick: one warm-up call and three timed ones at most. */
static void shorten(int *warmup, int *repeats)
{
    if (!settings.quick) return;
    if (*warmup > 1) *warmup = 1;
    if (*repeats > 3) *repeats = 3;
}

double ct_bench_time(void (*fn)(void *), void *context, int warmup, int repeats)
{
    shorten(&warmup, &repeats);
    for (int i = 0; i < warmup; i++) fn(context);
    double *times = malloc(sizeof *times * (size_t)repeats);
    if (!times) return 0.0;
    for (int i = 0; i < repeats; i++) {
        double start = ct_bench_now_seconds();
        fn(context);
        times[i] = ct_bench_now_seconds() - start;
    }
    double median = ct_bench_median(times, repeats);
    free(times);
    return median;
}

void ct_bench_compare(ct_bench_result *r, void (*ours)(void *), void (*baseline)(void *),
                      void *context, int warmup, int repeats, double work, double min_ratio)
{
    double t_baseline = ct_bench_time(baseline, context, warmup, repeats);
    double t_ours = ct_bench_time(ours, context, warmup, repeats);
    t_baseline = (t_baseline + ct_bench_time(baseline, context, 0, repeats)) / 2;
    t_ours = (t_ours + ct_bench_time(ours, context, 0, repeats)) / 2;
    r->value = work / t_ours;
    r->baseline = work / t_baseline;
    r->ratio = r->value / r->baseline;
    snprintf(r->target, sizeof r->target, "ratio >= %g", min_ratio);
    r->met = r->ratio >= min_ratio;
}

int ct_bench_calls_per_run(double seconds_per_call)
{
    if (!(seconds_per_call > 0)) return CT_BENCH_MAX_CALLS_PER_RUN;
    double calls = ceil(CT_BENCH_RUN_SECONDS / seconds_per_call);
    return calls < 1 ? 1 : (calls > CT_BENCH_MAX_CALLS_PER_RUN ? CT_BENCH_MAX_CALLS_PER_RUN : (int)calls);
}

/* One timed run: `calls` calls, then a wait for the device. */
static double timed_run(void (*fn)(void *), void *context, ct_device device, int calls)
{
    double start = ct_bench_now_seconds();
    for (int i = 0; i < calls; i++) fn(context);
    ct_synchronize(device);
    return ct_bench_now_seconds() - start;
}

double ct_bench_time_synced(void (*fn)(void *), void *context, ct_device device, int warmup,
                            int repeats, int *calls_per_run)
{
    shorten(&warmup, &repeats);
    for (int i = 0; i < warmup; i++) fn(context);
    ct_synchronize(device);
    int calls = calls_per_run && *calls_per_run > 0 ? *calls_per_run
                                                    : ct_bench_calls_per_run(timed_run(fn, context, device, 1));
    if (calls_per_run) *calls_per_run = calls;
    double *times = malloc(sizeof *times * (size_t)repeats);
    if (!times) return 0.0;
    for (int i = 0; i < repeats; i++) times[i] = timed_run(fn, context, device, calls);
    double median = ct_bench_median(times, repeats);
    free(times);
    return median / calls;
}

void ct_bench_compare_synced(ct_bench_result *r, void (*ours)(void *), void (*baseline)(void *),
                             void *context, ct_device device, int warmup, int repeats, double work,
                             double min_ratio)
{
    int calls_ours = 0, calls_baseline = 0;
    double t_ours = ct_bench_time_synced(ours, context, device, warmup, repeats, &calls_ours);
    if (!baseline) {
        r->value = work / t_ours;
        r->baseline = r->ratio = 0.0;
        snprintf(r->target, sizeof r->target, "report");
        r->met = true;
        return;
    }
    double t_baseline = ct_bench_time_synced(baseline, context, device, warmup, repeats, &calls_baseline);
    /* A second round, interleaved, so that a change of the machine's load meets both sides. */
    t_ours = (t_ours + ct_bench_time_synced(ours, context, device, 0, repeats, &calls_ours)) / 2;
    t_baseline = (t_baseline + ct_bench_time_synced(baseline, context, device, 0, repeats, &calls_baseline)) / 2;
    r->value = work / t_ours;
    r->baseline = work / t_baseline;
    r->ratio = r->value / r->baseline;
    snprintf(r->target, sizeof r->target, "ratio >= %g", min_ratio);
    r->met = r->ratio >= min_ratio;
}

void ct_bench_set_device(ct_bench_result *r, ct_device device)
{
    ct_device_format(device, r->device, sizeof r->device);
}
