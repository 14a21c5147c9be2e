/* ct_matmul of float32 square matrices on --device: on the CPU against the best engine measurable
 * on the machine, the faster in this run of OpenBLAS's cblas_sgemm and oneDNN's dnnl_sgemm (where
 * ctorch is built with oneDNN) on the same sizes (issue 22: ctorch within 0.9 of it); elsewhere alone (bench/torch_bench.py gives PyTorch's figures for matmul_f32_N, without
 * TF32 as ctorch's default). On a CUDA device the sizes PyTorch is measured at (1024 and up) run
 * again with TF32 allowed (ct_set_float32_matmul_precision("high") for that row only), as
 * matmul_f32_tf32_N beside PyTorch's with allow_tf32. 8192 only where ct_bench_big_sizes says so. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef CTORCH_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

#include "bench.h"
#include "ctorch.h"

void ct_bench_run_matmul(void *context)
{
    ct_bench_matmul_case *c = context;
    ct_release(ct_matmul(c->a, c->b));
}

void ct_bench_run_sgemm(void *context)
{
    ct_bench_matmul_case *c = context;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c->n, c->n, c->n, 1.0f, c->ra, c->n,
                c->rb, c->n, 0.0f, c->rc, c->n);
}

#ifdef CTORCH_HAVE_ONEDNN
static void run_onednn_sgemm(void *context)
{
    ct_bench_matmul_case *c = context;
    dnnl_sgemm('N', 'N', c->n, c->n, c->n, 1.0f, c->ra, c->n, c->rb, c->n, 0.0f, c->rc, c->n);
}
#endif

/* The faster raw library on this case (a short timing of each), named in *name. */
static void (*best_engine(ct_bench_matmul_case *c, ct_device device, const char **name))(void *)
{
    *name = "OpenBLAS";
#ifdef CTORCH_HAVE_ONEDNN
    int calls = 0;
    double openblas = ct_bench_time_synced(ct_bench_run_sgemm, c, device, 1, 3, &calls);
    calls = 0;
    double onednn = ct_bench_time_synced(run_onednn_sgemm, c, device, 1, 3, &calls);
    if (onednn < openblas) {
        *name = "oneDNN";
        return run_onednn_sgemm;
    }
#else
    (void)c;
    (void)device;
#endif
    return ct_bench_run_sgemm;
}

void ct_bench_matmul_case_free(ct_bench_matmul_case *c)
{
    ct_release(c->a);
    ct_release(c->b);
    free(c->ra);
    free(c->rb);
    free(c->rc);
}

void ct_bench_matmul(const char *filter, ct_bench_report report, void *context)
{
    static const int sizes[] = {256, 512, 1024, 2048, 8192};
    ct_device device = ct_bench_config_get()->device;
    bool cpu = device.type == CT_CPU;
    for (size_t row = 0; row < 2 * sizeof sizes / sizeof sizes[0]; row++) {
        size_t s = row / 2;
        bool tf32 = row % 2 == 1; /* a TF32 row after each size's exact one, on CUDA from 1024 */
        if (tf32 && (device.type != CT_CUDA || sizes[s] < 1024)) continue;
        ct_bench_result r = {.unit = "GFLOP/s"};
        snprintf(r.name, sizeof r.name, tf32 ? "matmul_f32_tf32_%d" : "matmul_f32_%d", sizes[s]);
        ct_bench_set_device(&r, device);
        if (!ct_bench_selected(filter, r.name) || (sizes[s] > 2048 && !ct_bench_big_sizes(device))) continue;
        const char *precision = ct_get_float32_matmul_precision();
        ct_set_float32_matmul_precision(tf32 ? "high" : "highest");
        int n = sizes[s];
        int64_t shape[2] = {n, n};
        ct_bench_matmul_case c = {.n = n};
        ct_manual_seed(0);
        c.a = ct_randn(shape, 2, CT_F32, device);
        c.b = ct_randn(shape, 2, CT_F32, device);
        size_t bytes = (size_t)n * (size_t)n * sizeof(float);
        if (cpu) {
            c.ra = aligned_alloc(4096, bytes);
            c.rb = aligned_alloc(4096, bytes);
            c.rc = aligned_alloc(4096, bytes);
        }
        if (!c.a || !c.b || (cpu && (!c.ra || !c.rb || !c.rc))) {
            fprintf(stderr, "bench %s: setup failed: %s\n", r.name, ct_last_error_message());
        } else {
            if (cpu) {
                ct_tensor_to_array(c.a, c.ra, bytes);
                ct_tensor_to_array(c.b, c.rb, bytes);
            }
            int repeats = n <= 512 ? 50 : (n <= 1024 ? 10 : (n <= 2048 ? 4 : 3));
            double flops = 2.0 * n * (double)n * n;
            const char *engine = NULL;
            void (*baseline)(void *) = cpu ? best_engine(&c, device, &engine) : NULL;
            ct_bench_compare_synced(&r, ct_bench_run_matmul, baseline, &c, device, n > 2048 ? 1 : 2,
                                    repeats, flops * 1e-9, 0.9);
            if (engine) snprintf(r.target, sizeof r.target, "ratio >= 0.9 of %s", engine);
            report(&r, context);
        }
        ct_bench_matmul_case_free(&c);
        ct_set_float32_matmul_precision(precision);
    }
}
