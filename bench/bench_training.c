/* Training steps of two MLPs through ctorch against the same step written by hand over
 * cblas_sgemm (bench_training_models.c), in the same run, after checking that both compute the
 * same losses and updates; and the allocations a warm step makes from the device's allocator. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"
#include "bench_accelerator.h"
#include "bench_training.h"

/* The digits MLP as `ctorch train --model mlp` builds it (64 pixels, a hidden layer of 256, 10
 * classes) at its default batch of 32, with SGD at its default rate; and a wide MLP (1024 wide,
 * 4 Linear layers, batch 256) that the matrix products dominate. */
static const struct training_case {
    const char *name;
    ct_mlp_spec spec;
    int steps_per_call; /* steps timed together, so that a timed call lasts about 1 ms or more */
    int repeats;
} cases[] = {
    {"digits", {2, {64, 256, 10}, 32, 0.05}, 20, 101},
    {"1024x4", {4, {1024, 1024, 1024, 1024, 1024}, 256, 0.01}, 1, 31},
};

typedef struct training_run {
    ct_mlp_ctorch ctorch;
    ct_mlp_baseline baseline;
    int steps;
    bool failed;
} training_run;

static void run_ctorch(void *context)
{
    training_run *r = context;
    for (int i = 0; i < r->steps && !r->failed; i++)
        if (!ct_mlp_ctorch_step(&r->ctorch, NULL)) {
            fprintf(stderr, "bench: %s\n", r->ctorch.error);
            r->failed = true;
        }
}

static void run_baseline(void *context)
{
    training_run *r = context;
    for (int i = 0; i < r->steps; i++) ct_mlp_baseline_step(&r->baseline);
}

/* Median seconds per call of each of a and b over `repeats` calls of each, alternating call by
 * call: on a machine shared with other jobs their load changes within a second, and both sides
 * must meet the same. */
static void time_alternating(void (*a)(void *), void (*b)(void *), void *context, int warmup,
                             int repeats, double *t_a, double *t_b)
{
    double *times = malloc(2 * sizeof *times * (size_t)repeats);
    *t_a = *t_b = 0.0;
    if (!times) return;
    for (int i = 0; i < warmup; i++) {
        a(context);
        b(context);
    }
    for (int i = 0; i < repeats; i++) {
        double start = ct_bench_now_seconds();
        a(context);
        double middle = ct_bench_now_seconds();
        b(context);
        times[i] = middle - start;
        times[repeats + i] = ct_bench_now_seconds() - middle;
    }
    *t_a = ct_bench_median(times, repeats);
    *t_b = ct_bench_median(times + repeats, repeats);
    free(times);
}

/* Reports a case that could not be measured, loudly, as a missed target. */
static void report_failure(ct_bench_result *r, const char *why, ct_bench_report report, void *context)
{
    fprintf(stderr, "bench %s: FAILED: %s\n", r->name, why);
    r->value = r->baseline = r->ratio = 0.0;
    r->met = false;
    report(r, context);
}

static void time_case(const struct training_case *c, ct_bench_report report, void *context)
{
    ct_bench_result r = {.unit = "steps/s"};
    snprintf(r.name, sizeof r.name, "train_mlp_%s_cpu", c->name);
    ct_bench_set_device(&r, CT_DEVICE_CPU);
    snprintf(r.target, sizeof r.target, "ratio >= 0.8");
    char why[512];
    /* Comparing speeds means nothing unless both loops compute the same step. */
    if (!ct_mlp_check_agreement(&c->spec, CT_DEVICE_CPU, 3, why, sizeof why)) {
        report_failure(&r, why, report, context);
        return;
    }
    training_run run = {.steps = c->steps_per_call};
    if (!ct_mlp_ctorch_init(&run.ctorch, &c->spec, CT_DEVICE_CPU, 1)) {
        report_failure(&r, run.ctorch.error, report, context);
    } else if (!ct_mlp_baseline_init_from(&run.baseline, &run.ctorch)) {
        report_failure(&r, run.baseline.error, report, context);
    } else {
        double t_base, t_ct;
        bool quick = ct_bench_config_get()->quick; /* a rehearsal: 1 warm-up, 3 timed calls */
        time_alternating(run_baseline, run_ctorch, &run, quick ? 1 : 2, quick ? 3 : c->repeats, &t_base, &t_ct);
        if (run.failed) {
            report_failure(&r, "ctorch's step failed while timing", report, context);
        } else {
            r.value = c->steps_per_call / t_ct;
            r.baseline = c->steps_per_call / t_base;
            r.ratio = r.value / r.baseline;
            r.met = r.ratio >= 0.8;
            report(&r, context);
        }
    }
    ct_mlp_baseline_free(&run.baseline);
    ct_mlp_ctorch_free(&run.ctorch);
}

/* Allocations from the driver or the system (calls that went past the caching allocator) per
 * step, counted over steps after a warm-up, on the model's device and on the cpu (where an
 * accelerator's step could still make host tensors), with the loss read every step as a
 * training loop does. The target is none. */
static uint64_t allocations(ct_device device)
{
    ct_memory_stats stats = {0};
    ct_memory_stats_get(device, &stats);
    uint64_t count = stats.device_allocations;
    if (device.type != CT_CPU) {
        ct_memory_stats_get(CT_DEVICE_CPU, &stats);
        count += stats.device_allocations;
    }
    return count;
}

static void count_allocations(const struct training_case *c, ct_device device, const char *filter,
                              ct_bench_report report, void *context)
{
    char device_name[32];
    ct_device_format(device, device_name, sizeof device_name);
    ct_bench_result r = {.unit = "allocs"};
    snprintf(r.name, sizeof r.name, "train_allocs_%s_%s", c->name, device_name);
    ct_bench_set_device(&r, device);
    if (!ct_bench_selected(filter, r.name)) return;
    snprintf(r.target, sizeof r.target, "value == 0");
    enum { WARMUP = 3, STEPS = 20 };
    ct_mlp_ctorch m;
    if (!ct_mlp_ctorch_init(&m, &c->spec, device, 1)) {
        report_failure(&r, m.error, report, context);
        ct_mlp_ctorch_free(&m);
        return;
    }
    double loss;
    bool ok = true;
    for (int i = 0; i < WARMUP && ok; i++) ok = ct_mlp_ctorch_step(&m, &loss);
    uint64_t before = ok ? allocations(device) : 0;
    for (int i = 0; i < STEPS && ok; i++) ok = ct_mlp_ctorch_step(&m, &loss);
    if (!ok) {
        report_failure(&r, m.error, report, context);
    } else {
        uint64_t made = allocations(device) - before;
        r.value = (double)made / STEPS;
        r.baseline = 0.0;
        r.met = made == 0;
        r.ratio = r.met ? 1.0 : 0.0;
        report(&r, context);
    }
    ct_mlp_ctorch_free(&m);
}

void ct_bench_training(const char *filter, ct_bench_report report, void *context)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct training_case *c = &cases[i];
        char name[64];
        snprintf(name, sizeof name, "train_mlp_%s_cpu", c->name);
        if (ct_bench_selected(filter, name)) time_case(c, report, context);
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        count_allocations(&cases[i], CT_DEVICE_CPU, filter, report, context);
    /* On the accelerator only the digits MLP: the wide one takes seconds a step on PoCL. */
    ct_device accelerator;
    if ((ct_bench_selected(filter, "train_allocs_digits_cuda:0") ||
         ct_bench_selected(filter, "train_allocs_digits_opencl:0")) && ct_bench_accelerator(&accelerator))
        count_allocations(&cases[0], accelerator, filter, report, context);
}
