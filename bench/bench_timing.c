/* Timing for every benchmark group: a monotonic clock, medians, and ctorch timed beside its
 * baseline. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

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

double ct_bench_time(void (*fn)(void *), void *context, int warmup, int repeats)
{
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
