/* ctorch benchmarks: each compares a ctorch call with the raw library or loop underneath, in the
 * same run, and reports the ratio (ctorch speed / baseline speed: 1.0 means no overhead). */
#ifndef CT_BENCH_H
#define CT_BENCH_H

#include <stdbool.h>
#include <stdio.h>

#include "ctorch.h"

typedef struct ct_bench_result {
    char name[64];
    double value;        /* ctorch's figure, in unit */
    double baseline;     /* the raw library's figure, in unit, measured in the same run */
    const char *unit;    /* "GFLOP/s", "GB/s", "us" */
    double ratio;        /* ctorch speed / baseline speed */
    char target[32];     /* the figure to reach, e.g. "ratio >= 0.95" or "value <= 1 us" */
    bool met;
    char device[24];     /* where ctorch's side ran ("cuda:0"); "" when that is not one device */
} ct_bench_result;

typedef void (*ct_bench_report)(const ct_bench_result *result, void *context);

/* What the command line asked for, seen by every group. */
typedef struct ct_bench_config {
    ct_device device; /* --device: where matmul, the memory-bound ops, the per-op overhead and the
                         models' training run (the CPU by default) */
    bool quick;       /* --quick: small sizes only, 1 warm-up and 3 timed runs at most (a rehearsal
                         of the benchmarks, not a measurement) */
    int big;          /* --big: 1, --no-big: 0, else -1: ct_bench_big_sizes decides */
} ct_bench_config;
const ct_bench_config *ct_bench_config_get(void);
void ct_bench_config_set(const ct_bench_config *config);

/* The big sizes (256M floats, matmul 8192) run on a device with at least CT_BENCH_BIG_MIN_GIB of
 * memory, and on the CPU only with at least CT_BENCH_BIG_MIN_CPUS threads as well (not on a
 * 2-core development or CI machine); never with --quick; --big and --no-big decide instead.
 * bench/torch_bench.py applies the same rule to PyTorch. */
#define CT_BENCH_BIG_MIN_GIB 16
#define CT_BENCH_BIG_MIN_CPUS 8
bool ct_bench_big_sizes(ct_device device);

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

/* Timing on a device, as bench/torch_bench.py times PyTorch: after `warmup` calls and a wait for
 * the device, one call is timed to choose the calls per timed run (enough for
 * CT_BENCH_RUN_SECONDS, 1 to CT_BENCH_MAX_CALLS_PER_RUN; *calls_per_run, when above 0, is used
 * instead, and is set to the count used); each timed run makes that many calls and waits for the
 * device (ct_synchronize). Returns the median run's seconds per call. */
#define CT_BENCH_RUN_SECONDS 0.002
#define CT_BENCH_MAX_CALLS_PER_RUN 100
int ct_bench_calls_per_run(double seconds_per_call);
double ct_bench_time_synced(void (*fn)(void *), void *context, ct_device device, int warmup,
                            int repeats, int *calls_per_run);
/* As ct_bench_compare, with ct_bench_time_synced. Without a baseline (NULL) it fills the value
 * alone: baseline and ratio 0, target "report", met. */
void ct_bench_compare_synced(ct_bench_result *r, void (*ours)(void *), void (*baseline)(void *),
                             void *context, ct_device device, int warmup, int repeats, double work,
                             double min_ratio);
/* r->device = the device's name. */
void ct_bench_set_device(ct_bench_result *r, ct_device device);

/* A training step captured as torch.cuda.graph's recipe does: step(context) once (the warm-up: the
 * optimizer's state exists before the capture), then once more, recorded on the device. The graph,
 * or NULL (ctorch's error says why) when the capture failed; step reports its own failures through
 * its context. */
ct_graph *ct_bench_capture_step(void (*step)(void *), void *context, ct_device device);

/* Square matrices of side n for a matmul benchmark: ctorch's operands, and for cblas_sgemm float32
 * copies of them on the host (ra, rb) and its result (rc), NULL where there is no such baseline. */
typedef struct ct_bench_matmul_case {
    int n;
    ct_tensor *a, *b;
    float *ra, *rb, *rc;
} ct_bench_matmul_case;
/* ct_matmul(a, b), released; context: a ct_bench_matmul_case (or a struct that begins with one). */
void ct_bench_run_matmul(void *context);
/* cblas_sgemm of ra and rb into rc; context as ct_bench_run_matmul's. */
void ct_bench_run_sgemm(void *context);
/* Releases a and b and frees the host copies (each may be NULL). */
void ct_bench_matmul_case_free(ct_bench_matmul_case *c);

/* Each benchmark group reports one result per measurement. */
void ct_bench_matmul(const char *filter, ct_bench_report report, void *context);
void ct_bench_elementwise(const char *filter, ct_bench_report report, void *context);
void ct_bench_overhead(const char *filter, ct_bench_report report, void *context);
/* MLP training steps against a hand-written C + OpenBLAS step, and warm steps' allocations. */
void ct_bench_training(const char *filter, ct_bench_report report, void *context);
/* The models of `ctorch train` (mlp, cnn; Adam) trained at batch 32 and 512 on --device, in
 * samples per second (bench_train_models.c). */
void ct_bench_train_models(const char *filter, ct_bench_report report, void *context);
/* The digits cnn's two convolutions, forward and backward, at batch 32 and 512 (bench_conv2d.c). */
void ct_bench_conv2d(const char *filter, ct_bench_report report, void *context);
/* LayerNorm forward + backward of [8192, 768] float32 against a plain loop over its bytes. */
void ct_bench_layer_norm(const char *filter, ct_bench_report report, void *context);
/* Scaled-dot-product attention forward and backward, fused against composed, and their peak
 * memory (bench_attention.c). */
void ct_bench_attention(const char *filter, ct_bench_report report, void *context);
/* A training step of a small transformer block built from today's ops (bench_transformer_block.c). */
void ct_bench_transformer_block(const char *filter, ct_bench_report report, void *context);
/* bench_gpt.c: a GPT's training step (ct_gpt, L 6, C 384, T 256, B 8) and its peak memory. */
void ct_bench_gpt(const char *filter, ct_bench_report report, void *context);
/* The digits mlp's Adam step, fused against per parameter: launches and host time per step. */
void ct_bench_optimizer_step(const char *filter, ct_bench_report report, void *context);
/* A digits training step captured once and replayed against the same step run eagerly, on the
 * CPU and on --device (or the first accelerator): steps/s, host time and launches per step
 * (bench_graphs.c). */
void ct_bench_graphs(const char *filter, ct_bench_report report, void *context);
/* On the first accelerator device (skipped where there is none). */
void ct_bench_transfer(const char *filter, ct_bench_report report, void *context);
void ct_bench_device_ops(const char *filter, ct_bench_report report, void *context);
/* float16/bfloat16 matmul and conversion against OpenBLAS's 16-bit gemm and a plain loop. */
void ct_bench_half(const char *filter, ct_bench_report report, void *context);
/* Between the ranks of an MPI job (under mpirun; skipped with a note otherwise). */
void ct_bench_distributed(const char *filter, ct_bench_report report, void *context);
/* DistributedDataParallel: a training step with DDP on every rank against one process with the
 * same global batch, and how much of the communication backward hides (under mpirun; skipped
 * with a note otherwise). */
void ct_bench_ddp(const char *filter, ct_bench_report report, void *context);
/* A training step over two devices of the first accelerator type against one (skipped without
 * two devices). */
void ct_bench_data_parallel(const char *filter, ct_bench_report report, void *context);

/* Does `name` pass the command line's filter? NULL passes all; otherwise a comma-separated list
 * of patterns, any of which may match: a substring of the name, or with '^' first it must begin
 * the name and with '$' last end it ("^add_f32_16M$" is that name alone). */
bool ct_bench_selected(const char *filter, const char *name);

/* `ctorch bench` and `ctorch-bench`: [--json] [--device D] [--quick] [--big|--no-big] [FILTER].
 * Returns the exit status. Under mpirun (a launcher world size above 1) it runs the distributed
 * benchmarks alone, on every rank, and rank 0 prints. */
int ct_bench_main(int argc, char **argv);

#endif
