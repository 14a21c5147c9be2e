/* `ctorch bench ddp`: the DistributedDataParallel measurements of bench_ddp_run.c (whose comment
 * says what they are and how they are made) at full size, as rows of the benchmark table, and
 * the details on standard error. Under mpirun only; rank 0 prints. */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "bench_ddp.h"
#include "ctorch.h"

static const ct_ddp_bench_spec full_spec = {
    .layers = 8, .width = 1024, .batch = 64, .bucket_cap_mb = 8, .warmup = 2, .repeats = 15,
    .settle_seconds = 0.15,
};

#ifdef CTORCH_HAVE_MPI

static void report_row(const char *name, const char *unit, double value, double baseline, double ratio,
                       ct_bench_report report, void *context)
{
    ct_bench_result r = {.unit = unit, .value = value, .baseline = baseline, .ratio = ratio, .met = true};
    snprintf(r.name, sizeof r.name, "%s", name);
    snprintf(r.target, sizeof r.target, "report");
    report(&r, context);
}

void ct_bench_ddp(const char *filter, ct_bench_report report, void *context)
{
    /* The rows; their ratios, as the rest of the table's, are "higher is better for ctorch". */
    static const char *step_name = "ddp_step_1024x8_b64";      /* samples/s: DDP / alone */
    static const char *at_end_name = "ddp_step_comm_at_end";  /* the same, CT_DDP_START_AFTER_BACKWARD */
    static const char *backward_name = "ddp_backward_overlap"; /* ms: DDP's backward / no_sync + all-reduce */
    static const char *hidden_name = "ddp_comm_hidden";        /* %: of the all-reduce alone's time */
    /* ms: ct_ddp_stats' wait after backward against its communication time; the ratio is the share of
     * that communication which ran during backward, by DDP's own clock */
    static const char *wait_name = "ddp_last_wait";
    bool step_on = ct_bench_selected(filter, step_name), at_end_on = ct_bench_selected(filter, at_end_name),
         backward_on = ct_bench_selected(filter, backward_name),
         hidden_on = ct_bench_selected(filter, hidden_name), wait_on = ct_bench_selected(filter, wait_name);
    if (!step_on && !at_end_on && !backward_on && !hidden_on && !wait_on) return;
    if (!ct_dist_is_initialized()) {
        fprintf(stderr, "bench: the ddp benchmarks run between MPI processes: mpirun -np 2 ctorch bench ddp\n");
        return;
    }
    double load[1] = {0};
    bool have_load = getloadavg(load, 1) == 1;
    ct_ddp_bench_figures f;
    if (!ct_ddp_bench_run(&full_spec, &f)) {
        if (ct_dist_rank() == 0) fprintf(stderr, "bench ddp: %s\n", f.error);
        return;
    }
    if (ct_dist_rank() != 0) return;
    double samples = (double)f.world * full_spec.batch;
    if (step_on)
        report_row(step_name, "samples/s", samples / f.step_ddp, samples / f.step_alone, f.step_alone / f.step_ddp,
                   report, context);
    if (at_end_on)
        report_row(at_end_name, "samples/s", samples / f.step_ddp_at_end, samples / f.step_alone,
                   f.step_alone / f.step_ddp_at_end, report, context);
    if (backward_on)
        report_row(backward_name, "ms", f.backward_ddp * 1e3, (f.backward_no_sync + f.all_reduce) * 1e3,
                   (f.backward_no_sync + f.all_reduce) / f.backward_ddp, report, context);
    if (hidden_on) report_row(hidden_name, "%", f.hidden_fraction * 100, 100, f.hidden_fraction, report, context);
    if (wait_on)
        report_row(wait_name, "ms", f.last_wait * 1e3, f.last_communication * 1e3,
                   f.last_communication > 0 ? 1 - f.last_wait / f.last_communication : 0, report, context);
    fprintf(stderr, "bench ddp: %d ranks x %d thread%s (DDP, %d rows each) against rank 0 alone with %d thread%s "
            "(%d rows); %d x Linear(%d, %d): %.1f MB of gradients in %d buckets (bucket_cap_mb %g); load average "
            "%.2f before the run\n", f.world, f.threads_per_rank, f.threads_per_rank == 1 ? "" : "s",
            full_spec.batch, f.threads_alone, f.threads_alone == 1 ? "" : "s", f.world * full_spec.batch,
            full_spec.layers, full_spec.width, full_spec.width, (double)f.gradient_bytes / 1e6, f.bucket_count,
            full_spec.bucket_cap_mb, have_load ? load[0] : -1.0);
    if (f.widened_affinity)
        fprintf(stderr, "bench ddp: mpirun had bound each rank to fewer CPUs than the machine has; the benchmark "
                        "let its threads use them all (mpirun --bind-to none avoids this)\n");
    fprintf(stderr, "bench ddp: step: DDP %.1f ms (with the all-reduces after backward: %.1f ms), DDP under no_sync %.1f ms, alone %.1f ms; backward: DDP "
            "%.1f ms, no_sync %.1f ms; all-reduce alone (%s) %.1f ms: %.0f%% of it hidden; DDP's stats: "
            "communication %.1f ms, waited %.1f ms after backward\n", f.step_ddp * 1e3, f.step_ddp_at_end * 1e3,
            f.step_no_sync * 1e3,
            f.step_alone * 1e3, f.backward_ddp * 1e3, f.backward_no_sync * 1e3,
            f.all_reduce_per_bucket ? "a tensor per bucket" : "one flat tensor", f.all_reduce * 1e3,
            f.hidden_fraction * 100, f.last_communication * 1e3, f.last_wait * 1e3);
}

#else

void ct_bench_ddp(const char *filter, ct_bench_report report, void *context)
{
    (void)report;
    (void)context;
    (void)full_spec;
    if (ct_bench_selected(filter, "ddp_"))
        fprintf(stderr, "bench: ctorch was built without MPI: no ddp benchmarks\n");
}

#endif
