/* ct_scaled_dot_product_attention: the fused path (kernels/attention.ct) gives the composed
 * path's output and gradients (q, k, v) on every device and floating dtype, at sizes where its
 * tiles change (T = 1, T not a multiple of a tile, Tq != Tk, D = 16 and 64), causal or not; a
 * fully masked row is 0, as in PyTorch; the CPU's own fused path (float32 and float64) across
 * its blocks and in a graph; the fused path's memory grows linearly in T; bad arguments fail
 * with errors naming them. CTORCH_SDPA picks the path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/devices.h"
#include "test_common.h"

typedef struct result {
    double *values[4]; /* out, dq, dk, dv as float64 on the host */
    int64_t counts[4];
} result;

static double *host_values(const ct_tensor *t, int64_t *count)
{
    ct_tensor *cpu = ct_to(t, CT_DEVICE_CPU);
    ct_tensor *wide = ct_to_dtype(cpu, CT_F64);
    *count = ct_numel(wide);
    double *v = malloc(sizeof(double) * (size_t)(*count > 0 ? *count : 1));
    assert_int_equal(ct_tensor_to_array(wide, v, sizeof(double) * (size_t)*count), CT_OK);
    ct_release(cpu);
    ct_release(wide);
    return v;
}

static ct_tensor *random_on(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device)
{
    ct_tensor *r = ct_randn(shape, ndim, CT_F64, CT_DEVICE_CPU);
    ct_tensor *d = ct_to_dtype(r, dtype);
    ct_tensor *out = ct_to(d, device);
    ct_release(r);
    ct_release(d);
    return out;
}

/* out and the gradients of sum(out * w) under CTORCH_SDPA=path, from the seed's inputs. */
static result run(const char *path, ct_device device, ct_dtype dtype, int64_t bh, int64_t tq,
                  int64_t tk, int64_t d, bool causal)
{
    setenv("CTORCH_SDPA", path, 1);
    ct_scope_push();
    ct_manual_seed(11);
    int64_t qs[4] = {2, bh / 2, tq, d}, ks[4] = {2, bh / 2, tk, d}, os[4] = {2, bh / 2, tq, d};
    ct_tensor *q = random_on(qs, 4, dtype, device), *k = random_on(ks, 4, dtype, device);
    ct_tensor *v = random_on(ks, 4, dtype, device), *w = random_on(os, 4, dtype, device);
    ct_requires_grad_(q, true);
    ct_requires_grad_(k, true);
    ct_requires_grad_(v, true);
    ct_tensor *out = ct_scaled_dot_product_attention(q, k, v, NULL, 0.0, causal, 0.0);
    if (!out) fail_msg("%s attention failed: %s", path, ct_last_error_message());
    assert_int_equal(ct_backward(ct_sum(ct_mul(out, w), NULL, 0, false)), CT_OK);
    result r;
    const ct_tensor *parts[4] = {out, ct_grad(q), ct_grad(k), ct_grad(v)};
    for (int i = 0; i < 4; i++) r.values[i] = host_values(parts[i], &r.counts[i]);
    for (int i = 1; i < 4; i++) ct_release((ct_tensor *)parts[i]);
    ct_scope_pop();
    unsetenv("CTORCH_SDPA");
    return r;
}

static void free_result(result *r)
{
    for (int i = 0; i < 4; i++) free(r->values[i]);
}

static void compare(const char *what, const result *fused, const result *composed, double tol)
{
    static const char *names[4] = {"out", "dq", "dk", "dv"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(fused->counts[i], composed->counts[i]);
        for (int64_t e = 0; e < fused->counts[i]; e++) {
            double a = fused->values[i][e], b = composed->values[i][e];
            if (!(fabs(a - b) <= tol * (1 + fabs(b))))
                fail_msg("%s: %s[%lld] fused %.9g, composed %.9g", what, names[i], (long long)e, a, b);
        }
    }
}

static void fused_matches_composed_on(ct_device device)
{
    static const struct { int64_t tq, tk, d; } sizes[] = {
        {1, 1, 16}, {1, 7, 16}, {37, 37, 16}, {5, 9, 64}, {20, 13, 64}, {70, 70, 32},
    };
    ct_dtype dtypes[4] = {CT_F64, CT_F32, CT_BF16, CT_F16};
    double tolerances[4] = {1e-10, 2e-5, 4e-2, 1e-2};
    for (int t = 0; t < 4; t++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            if (t >= 2 && s > 3) continue; /* 16-bit: the small sizes */
            for (int causal = 0; causal < 2; causal++) {
                char what[160];
                snprintf(what, sizeof what, "device %d:%d %s Tq=%lld Tk=%lld D=%lld%s",
                         (int)device.type, device.index, ct_dtype_name(dtypes[t]), (long long)sizes[s].tq,
                         (long long)sizes[s].tk, (long long)sizes[s].d, causal ? " causal" : "");
                result fused = run("fused", device, dtypes[t], 4, sizes[s].tq, sizes[s].tk,
                                   sizes[s].d, causal);
                result composed = run("math", device, dtypes[t], 4, sizes[s].tq, sizes[s].tk,
                                      sizes[s].d, causal);
                compare(what, &fused, &composed, tolerances[t]);
                free_result(&fused);
                free_result(&composed);
            }
        }
    }
}

static void fused_matches_composed_on_every_device(void **state)
{
    (void)state;
    ct_device devices[8];
    int n = ct_test_devices(devices);
    for (int i = 0; i < n; i++) fused_matches_composed_on(devices[i]);
    for (int i = 0; i < ct_device_count(CT_CUDA); i++) fused_matches_composed_on((ct_device){CT_CUDA, i});
    ct_clear_error();
}

/* The CPU's float32 and float64 fused attention (backend/cpu/cpu_attention.c) works in blocks of
 * 128 query and 128 key rows: T not a multiple of a block, T below one, exactly one, causal with
 * Tq < Tk and Tq > Tk, D 16 to 128. */
static void cpu_blocks_match_composed(void **state)
{
    (void)state;
    static const struct { int64_t tq, tk, d; } sizes[] = {
        {300, 300, 64}, {128, 128, 64}, {129, 260, 16}, {260, 129, 128}, {1, 300, 64}, {100, 100, 32},
    };
    ct_dtype dtypes[2] = {CT_F32, CT_F64};
    double tolerances[2] = {2e-5, 1e-10};
    for (int t = 0; t < 2; t++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int causal = 0; causal < 2; causal++) {
                char what[160];
                snprintf(what, sizeof what, "cpu %s Tq=%lld Tk=%lld D=%lld%s", ct_dtype_name(dtypes[t]),
                         (long long)sizes[s].tq, (long long)sizes[s].tk, (long long)sizes[s].d,
                         causal ? " causal" : "");
                result fused = run("fused", CT_DEVICE_CPU, dtypes[t], 2, sizes[s].tq, sizes[s].tk,
                                   sizes[s].d, causal);
                result composed = run("math", CT_DEVICE_CPU, dtypes[t], 2, sizes[s].tq, sizes[s].tk,
                                      sizes[s].d, causal);
                compare(what, &fused, &composed, tolerances[t]);
                free_result(&fused);
                free_result(&composed);
            }
}

/* A graph captured on the CPU records the backend's attention calls (forward and backward) and
 * a replay computes them again from the inputs' new values: the bits of an eager run. */
static void cpu_attention_replays_in_a_graph(void **state)
{
    (void)state;
    ct_scope_push();
    ct_manual_seed(5);
    int64_t s[4] = {1, 2, 150, 16};
    enum { N = 2 * 150 * 16 };
    ct_tensor *q = ct_randn(s, 4, CT_F32, CT_DEVICE_CPU), *k = ct_randn(s, 4, CT_F32, CT_DEVICE_CPU);
    ct_tensor *v = ct_randn(s, 4, CT_F32, CT_DEVICE_CPU), *g = ct_randn(s, 4, CT_F32, CT_DEVICE_CPU);
    ct_tensor *later = ct_randn(s, 4, CT_F32, CT_DEVICE_CPU);
    ct_requires_grad_(later, true);
    ct_tensor *eager = ct_scaled_dot_product_attention(later, k, v, NULL, 0.0, true, 0.0);
    assert_int_equal(ct_backward_with(eager, g, false), CT_OK);
    static float want_out[N], want_dq[N], got_out[N], got_dq[N];
    assert_int_equal(ct_tensor_to_array(eager, want_out, sizeof want_out), CT_OK);
    assert_int_equal(ct_tensor_to_array(ct_grad(later), want_dq, sizeof want_dq), CT_OK);
    ct_requires_grad_(q, true);
    ct_graph *graph = ct_graph_new();
    assert_int_equal(ct_graph_begin(graph, CT_DEVICE_CPU, NULL), CT_OK);
    ct_tensor *out = ct_scaled_dot_product_attention(q, k, v, NULL, 0.0, true, 0.0);
    assert_int_equal(ct_backward_with(out, g, false), CT_OK);
    assert_int_equal(ct_graph_end(graph), CT_OK);
    bool was_enabled = ct_set_grad_enabled(false);
    assert_int_equal(ct_copy_(q, later), CT_OK);
    ct_set_grad_enabled(was_enabled);
    assert_int_equal(ct_graph_replay(graph), CT_OK);
    assert_int_equal(ct_tensor_to_array(out, got_out, sizeof got_out), CT_OK);
    assert_int_equal(ct_tensor_to_array(ct_grad(q), got_dq, sizeof got_dq), CT_OK);
    assert_memory_equal(got_out, want_out, sizeof want_out);
    assert_memory_equal(got_dq, want_dq, sizeof want_dq);
    ct_graph_free(graph);
    ct_scope_pop();
}

/* A bool mask that hides every key of a row: that row is 0 (PyTorch's safe softmax), the
 * others are not; a float mask of -inf the same. */
static void fully_masked_rows_are_zero(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t s[3] = {1, 3, 4}, ms[2] = {3, 3};
    ct_tensor *q = ct_randn(s, 3, CT_F32, CT_DEVICE_CPU), *k = ct_randn(s, 3, CT_F32, CT_DEVICE_CPU);
    ct_tensor *v = ct_randn(s, 3, CT_F32, CT_DEVICE_CPU);
    const unsigned char allow[9] = {1, 1, 0, 0, 0, 0, 1, 0, 1};
    ct_tensor *mask = ct_tensor_from_data(allow, CT_BOOL, ms, 2, CT_DEVICE_CPU);
    const float add[9] = {0, 0, -INFINITY, -INFINITY, -INFINITY, -INFINITY, 0, -INFINITY, 0};
    ct_tensor *additive = ct_tensor_from_data(add, CT_F32, ms, 2, CT_DEVICE_CPU);
    const ct_tensor *masks[2] = {mask, additive};
    for (int m = 0; m < 2; m++) {
        ct_tensor *out = ct_scaled_dot_product_attention(q, k, v, masks[m], 0.0, false, 0.0);
        float got[12];
        assert_int_equal(ct_tensor_to_array(out, got, sizeof got), CT_OK);
        for (int i = 0; i < 12; i++) {
            if (i / 4 == 1) assert_true(got[i] == 0.0f);
            else assert_true(isfinite(got[i]) && got[i] != 0.0f);
        }
    }
    ct_scope_pop();
}

/* Peak bytes of a forward and backward at [1, 2, T, 16]. */
static size_t peak_bytes(const char *path, int64_t t)
{
    setenv("CTORCH_SDPA", path, 1);
    ct_scope_push();
    int64_t s[4] = {1, 2, t, 16};
    ct_tensor *q = ct_randn(s, 4, CT_F32, CT_DEVICE_CPU), *k = ct_randn(s, 4, CT_F32, CT_DEVICE_CPU);
    ct_tensor *v = ct_randn(s, 4, CT_F32, CT_DEVICE_CPU);
    ct_requires_grad_(q, true);
    ct_requires_grad_(k, true);
    ct_requires_grad_(v, true);
    size_t before = ct_memory_allocated(CT_DEVICE_CPU);
    ct_reset_peak_memory_stats(CT_DEVICE_CPU);
    ct_tensor *out = ct_scaled_dot_product_attention(q, k, v, NULL, 0.0, true, 0.0);
    assert_int_equal(ct_backward(ct_sum(out, NULL, 0, false)), CT_OK);
    size_t peak = ct_max_memory_allocated(CT_DEVICE_CPU) - before;
    ct_scope_pop();
    unsetenv("CTORCH_SDPA");
    return peak;
}

static void fused_memory_grows_linearly_in_t(void **state)
{
    (void)state;
    size_t fused_small = peak_bytes("fused", 512), fused_large = peak_bytes("fused", 2048);
    size_t composed_small = peak_bytes("math", 512), composed_large = peak_bytes("math", 2048);
    /* 4x the sequence: about 4x the fused path's bytes, 16x the composed path's */
    assert_true(fused_large < 5 * fused_small);
    assert_true(composed_large > 10 * composed_small);
    assert_true(fused_large * 8 < composed_large);
}

static void bad_arguments_fail_with_errors(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t s[3] = {2, 5, 8}, s2[3] = {2, 5, 6}, ms[2] = {5, 5};
    ct_tensor *q = ct_randn(s, 3, CT_F32, CT_DEVICE_CPU), *k = ct_randn(s, 3, CT_F32, CT_DEVICE_CPU);
    ct_tensor *v = ct_randn(s, 3, CT_F32, CT_DEVICE_CPU), *k6 = ct_randn(s2, 3, CT_F32, CT_DEVICE_CPU);
    ct_tensor *q64 = ct_randn(s, 3, CT_F64, CT_DEVICE_CPU), *mask = ct_ones(ms, 2, CT_BOOL, CT_DEVICE_CPU);
    ct_tensor *int_mask = ct_ones(ms, 2, CT_I32, CT_DEVICE_CPU);
    assert_null(ct_scaled_dot_product_attention(q, k6, v, NULL, 0.0, false, 0.0));
    assert_error(CT_ERR_SHAPE, "last dim");
    assert_null(ct_scaled_dot_product_attention(q64, k, v, NULL, 0.0, false, 0.0));
    assert_error(CT_ERR_DTYPE, "one dtype");
    assert_null(ct_scaled_dot_product_attention(q, k, v, NULL, 1.0, false, 0.0));
    assert_error(CT_ERR_INVALID_ARGUMENT, "dropout_p");
    assert_null(ct_scaled_dot_product_attention(q, k, v, NULL, -0.5, false, 0.0));
    assert_error(CT_ERR_INVALID_ARGUMENT, "dropout_p");
    assert_null(ct_scaled_dot_product_attention(q, k, v, mask, 0.0, true, 0.0));
    assert_error(CT_ERR_INVALID_ARGUMENT, "is_causal");
    assert_null(ct_scaled_dot_product_attention(q, k, v, int_mask, 0.0, false, 0.0));
    assert_error(CT_ERR_DTYPE, "attn_mask");
    assert_null(ct_scaled_dot_product_attention(NULL, k, v, NULL, 0.0, false, 0.0));
    assert_error(CT_ERR_NULL_ARGUMENT, "q");
    setenv("CTORCH_SDPA", "fused", 1);
    assert_null(ct_scaled_dot_product_attention(q, k, v, mask, 0.0, false, 0.0));
    assert_error(CT_ERR_INVALID_ARGUMENT, "attn_mask");
    unsetenv("CTORCH_SDPA");
    if (ct_device_count(CT_OPENCL) > 0) {
        ct_tensor *elsewhere = ct_to(k, (ct_device){CT_OPENCL, 0});
        assert_null(ct_scaled_dot_product_attention(q, elsewhere, v, NULL, 0.0, false, 0.0));
        assert_int_equal(ct_last_error(), CT_ERR_DEVICE);
        ct_clear_error();
    }
    ct_clear_error();
    ct_scope_pop();
}

/* Dropout keeps the expected fraction and is reproducible from the seed. */
static void dropout_draws_from_the_seed(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t s[3] = {1, 64, 8};
    ct_tensor *q = ct_zeros(s, 3, CT_F64, CT_DEVICE_CPU), *v = ct_ones(s, 3, CT_F64, CT_DEVICE_CPU);
    double first[512], second[512];
    for (int run = 0; run < 2; run++) {
        ct_manual_seed(3);
        ct_tensor *out = ct_scaled_dot_product_attention(q, q, v, NULL, 0.5, false, 0.0);
        assert_int_equal(ct_tensor_to_array(out, run ? second : first, sizeof first), CT_OK);
    }
    double mean = 0;
    for (int i = 0; i < 512; i++) {
        assert_true(first[i] == second[i]);
        mean += first[i] / 512;
    }
    assert_true(fabs(mean - 1.0) < 0.1); /* uniform weights 1/64, kept half, scaled by 2 */
    ct_scope_pop();
}

/* Under autocast (bfloat16 on the CPU) float32 q, k and v run in bfloat16, as PyTorch's
 * autocast lists scaled_dot_product_attention among the lower-precision ops. */
static void autocast_runs_attention_in_the_low_dtype(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t s[3] = {2, 5, 8};
    ct_tensor *q = ct_randn(s, 3, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_autocast_push(CT_CPU, CT_BF16), CT_OK);
    ct_tensor *out = ct_scaled_dot_product_attention(q, q, q, NULL, 0.0, true, 0.0);
    assert_int_equal(ct_autocast_pop(), CT_OK);
    assert_non_null(out);
    assert_int_equal(ct_tensor_dtype(out), CT_BF16);
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fused_matches_composed_on_every_device),
        cmocka_unit_test(cpu_blocks_match_composed),
        cmocka_unit_test(cpu_attention_replays_in_a_graph),
        cmocka_unit_test(fully_masked_rows_are_zero),
        cmocka_unit_test(fused_memory_grows_linearly_in_t),
        cmocka_unit_test(bad_arguments_fail_with_errors),
        cmocka_unit_test(dropout_draws_from_the_seed),
        cmocka_unit_test(autocast_runs_attention_in_the_low_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
