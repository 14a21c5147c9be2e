/* The CPU's kernels write an output larger than half the last-level cache around the caches
 * (non-temporal stores, src/kernels/stream_store.h), a vector at a time, with plain stores for a
 * row's unaligned head and its tail. The values are those of the plain loop, bit for bit: shown
 * on LayerNorm's forward and backward (the kernels that stream) in every floating dtype, with rows
 * whose starts fall at every alignment (an odd width), by lowering the threshold so that small
 * tensors stream too. */
#include <limits.h>
#include <math.h>

#include "kernels/stream_store.h"
#include "support/tensors.h"
#include "test_common.h"

static const ct_device cpu = {CT_CPU, 0};

typedef struct ln_outputs {
    ct_tensor *y, *dx, *dw, *db;
} ln_outputs;

/* y = layer_norm(x) over the last dim, then the backward from dy; every result on the host. */
static ln_outputs layer_norm_both_ways(ct_dtype dtype, int64_t rows, int64_t width, long streaming_min)
{
    long saved = ct_cpu_streaming_min_bytes;
    ct_cpu_streaming_min_bytes = streaming_min;
    ct_manual_seed(7);
    int64_t shape[2] = {rows, width};
    ct_tensor *x = ct_to_dtype(ct_randn(shape, 2, CT_F32, cpu), dtype);
    ct_tensor *w = ct_to_dtype(ct_randn(&width, 1, CT_F32, cpu), dtype);
    ct_tensor *b = ct_to_dtype(ct_randn(&width, 1, CT_F32, cpu), dtype);
    ct_tensor *dy = ct_to_dtype(ct_randn(shape, 2, CT_F32, cpu), dtype);
    assert_non_null(x);
    assert_non_null(dy);
    assert_int_equal(ct_requires_grad_(x, true), CT_OK);
    assert_int_equal(ct_requires_grad_(w, true), CT_OK);
    assert_int_equal(ct_requires_grad_(b, true), CT_OK);
    ln_outputs out = {0};
    out.y = ct_layer_norm(x, &width, 1, w, b, 1e-5);
    assert_non_null(out.y);
    assert_int_equal(ct_backward_with(out.y, dy, false), CT_OK);
    out.dx = ct_grad(x);
    out.dw = ct_grad(w);
    out.db = ct_grad(b);
    assert_non_null(out.dx);
    assert_non_null(out.dw);
    assert_non_null(out.db);
    ct_cpu_streaming_min_bytes = saved;
    return out;
}

static void assert_same_bits(const ct_tensor *a, const ct_tensor *b, const char *what)
{
    int64_t n = ct_numel(a);
    assert_int_equal(n, ct_numel(b));
    size_t bytes = (size_t)n * ct_dtype_size(ct_tensor_dtype(a));
    if (memcmp(ct_data_ptr(a), ct_data_ptr(b), bytes) != 0) fail_msg("%s: streamed bits differ", what);
}

static void streamed_layer_norm_matches_plain(ct_dtype dtype, int64_t rows, int64_t width)
{
    ct_scope_push();
    ln_outputs plain = layer_norm_both_ways(dtype, rows, width, LONG_MAX);
    ln_outputs streamed = layer_norm_both_ways(dtype, rows, width, 0);
    assert_same_bits(streamed.y, plain.y, "y");
    assert_same_bits(streamed.dx, plain.dx, "x's gradient");
    assert_same_bits(streamed.dw, plain.dw, "weight's gradient");
    assert_same_bits(streamed.db, plain.db, "bias's gradient");
    ct_scope_pop();
}

static void float32_rows_at_every_alignment(void **state)
{
    (void)state;
    streamed_layer_norm_matches_plain(CT_F32, 37, 1003);
    streamed_layer_norm_matches_plain(CT_F32, 16, 768);
    streamed_layer_norm_matches_plain(CT_F32, 5, 3); /* rows shorter than a vector */
}

static void float64_and_16_bit_rows(void **state)
{
    (void)state;
    streamed_layer_norm_matches_plain(CT_F64, 19, 501);
    streamed_layer_norm_matches_plain(CT_F16, 23, 1001);
    streamed_layer_norm_matches_plain(CT_BF16, 23, 1001);
}

/* The CPU backend sets the threshold from the cache's size at its first kernel launch
 * (cpu_kernels.c): one launch first, so that it does not overwrite the values set here. */
static int launch_once(void **state)
{
    (void)state;
    int64_t one = 1;
    ct_tensor *t = ct_randn(&one, 1, CT_F32, cpu);
    ct_release(t);
    return t ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(float32_rows_at_every_alignment),
        cmocka_unit_test(float64_and_16_bit_rows),
    };
    return cmocka_run_group_tests(tests, launch_once, NULL);
}
