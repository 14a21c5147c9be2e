/* The CPU's two engines, oneDNN (products and convolutions as primitives) and OpenBLAS with
 * ctorch's im2col (src/backend/cpu/cpu_engine_choice.c), give the same convolutions and products
 * within float32 rounding, both checked against ctorch's float64 (OpenBLAS's dgemm, another
 * path): forward and the three gradients, over groups, strides, padding, dilation and no bias.
 * Where oneDNN is built in, a convolution runs no im2col kernel, results are the same bits run to
 * run, and the primitive cache stays within its bound.
 * Pooling: the CPU's own loops (src/backend/cpu/cpu_pool.c) give the dialect kernels' very bits
 * (outputs, indices, gradients; NaN, ties, -inf and padding included), and replay in a graph. */
#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_engine_choice.h"
#include "kernels/kernel_ids.h"
#ifdef CTORCH_HAVE_ONEDNN
#include "backend/cpu/onednn_engine.h"
#endif
#include "test_common.h"

typedef struct conv_case {
    const char *name;
    int64_t n, c, h, w, o, kh, kw, groups;
    int64_t stride[2], padding[2], dilation[2];
    bool bias;
} conv_case;

static const conv_case conv_cases[] = {
    {"digits cnn layer 1", 4, 1, 8, 8, 16, 3, 3, 1, {1, 1}, {1, 1}, {1, 1}, true},
    {"digits cnn layer 2", 4, 16, 4, 4, 32, 3, 3, 1, {1, 1}, {1, 1}, {1, 1}, true},
    {"strided, no bias", 3, 5, 9, 7, 6, 3, 2, 1, {2, 3}, {1, 0}, {1, 1}, false},
    {"dilated", 2, 4, 10, 10, 8, 3, 3, 1, {1, 1}, {2, 2}, {2, 2}, true},
    {"grouped", 2, 6, 7, 7, 9, 3, 3, 3, {1, 1}, {1, 1}, {1, 1}, true},
    {"depthwise", 2, 8, 6, 6, 8, 3, 3, 8, {2, 2}, {1, 1}, {1, 1}, false},
    {"one by one", 5, 12, 5, 5, 20, 1, 1, 1, {1, 1}, {0, 0}, {1, 1}, true},
};

/* The values of a float tensor as doubles (new array). */
static double *values(const ct_tensor *t)
{
    ct_tensor *wide = ct_to_dtype(t, CT_F64);
    assert_non_null(wide);
    int64_t count = ct_numel(wide);
    double *out = malloc(sizeof(double) * (size_t)(count ? count : 1));
    assert_non_null(out);
    assert_int_equal(ct_tensor_to_array(wide, out, sizeof(double) * (size_t)count), CT_OK);
    ct_release(wide);
    return out;
}

/* out, and the gradients of sum(out * r) with respect to x, w and b, in `dtype`. */
typedef struct conv_result {
    double *out, *gx, *gw, *gb;
    int64_t out_count, x_count, w_count, o;
} conv_result;

static conv_result convolve(const conv_case *k, ct_dtype dtype)
{
    ct_manual_seed(11);
    ct_tensor *x64 = ct_randn((int64_t[]){k->n, k->c, k->h, k->w}, 4, CT_F64, CT_DEVICE_CPU);
    ct_tensor *w64 = ct_randn((int64_t[]){k->o, k->c / k->groups, k->kh, k->kw}, 4, CT_F64, CT_DEVICE_CPU);
    ct_tensor *b64 = ct_randn((int64_t[]){k->o}, 1, CT_F64, CT_DEVICE_CPU);
    ct_tensor *x = ct_to_dtype(x64, dtype), *w = ct_to_dtype(w64, dtype), *b = ct_to_dtype(b64, dtype);
    assert_int_equal(ct_requires_grad_(x, true), CT_OK);
    assert_int_equal(ct_requires_grad_(w, true), CT_OK);
    assert_int_equal(ct_requires_grad_(b, true), CT_OK);
    ct_tensor *out = ct_conv2d(x, w, k->bias ? b : NULL, k->stride, k->padding, k->dilation, k->groups);
    assert_non_null(out);
    ct_tensor *r64 = ct_randn(ct_tensor_shape(out), 4, CT_F64, CT_DEVICE_CPU);
    ct_tensor *r = ct_to_dtype(r64, dtype);
    ct_tensor *weighted = ct_mul(out, r);
    ct_tensor *loss = ct_sum(weighted, NULL, 0, false);
    assert_non_null(loss);
    assert_int_equal(ct_backward(loss), CT_OK);
    conv_result result = {.out = values(out), .out_count = ct_numel(out), .x_count = ct_numel(x),
                          .w_count = ct_numel(w), .o = k->o};
    ct_tensor *gx = ct_grad(x), *gw = ct_grad(w), *gb = ct_grad(b);
    result.gx = values(gx);
    result.gw = values(gw);
    result.gb = k->bias ? values(gb) : NULL;
    ct_tensor *all[] = {x64, w64, b64, x, w, b, out, r64, r, weighted, loss, gx, gw, gb};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ct_release(all[i]);
    return result;
}

static void free_result(conv_result *r)
{
    free(r->out);
    free(r->gx);
    free(r->gw);
    free(r->gb);
}

/* Every element within float32 rounding of sums of a few hundred terms of the float64 value. */
static void assert_close(const char *what, const char *name, const double *got, const double *want,
                         int64_t count)
{
    for (int64_t i = 0; i < count; i++) {
        double tolerance = 1e-4 * (1.0 + fabs(want[i]));
        if (fabs(got[i] - want[i]) > tolerance)
            fail_msg("%s of '%s', element %lld: %.9g, float64 %.9g", what, name, (long long)i, got[i], want[i]);
    }
}

static void check_against_float64(const conv_case *k, const conv_result *got, const conv_result *want)
{
    assert_close("output", k->name, got->out, want->out, want->out_count);
    assert_close("input gradient", k->name, got->gx, want->gx, want->x_count);
    assert_close("weight gradient", k->name, got->gw, want->gw, want->w_count);
    if (k->bias) assert_close("bias gradient", k->name, got->gb, want->gb, want->o);
}

static uint64_t im2col_launches(void)
{
    return ct_backend_launch_count(CT_DEVICE_CPU, CT_K_im2col_f32) +
           ct_backend_launch_count(CT_DEVICE_CPU, CT_K_col2im_f32);
}

static void convolutions_agree_with_float64_on_both_engines(void **state)
{
    (void)state;
    const char *engines[] = {"auto", "openblas"};
    for (size_t c = 0; c < sizeof conv_cases / sizeof *conv_cases; c++) {
        const conv_case *k = &conv_cases[c];
        conv_result want = convolve(k, CT_F64);
        for (int e = 0; e < 2; e++) {
            ct_cpu_engine_set_for_testing(engines[e]);
            uint64_t before = im2col_launches();
            conv_result got = convolve(k, CT_F32);
            bool in_library = e == 0 && ct_cpu_conv_in_onednn();
            if (in_library && im2col_launches() != before)
                fail_msg("'%s' with oneDNN ran im2col or col2im", k->name);
            if (!in_library && im2col_launches() == before)
                fail_msg("'%s' on %s ran no im2col", k->name, engines[e]);
            check_against_float64(k, &got, &want);
            free_result(&got);
        }
        free_result(&want);
    }
    ct_cpu_engine_set_for_testing(NULL);
}

static void convolutions_are_the_same_bits_run_to_run(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof conv_cases / sizeof *conv_cases; c++) {
        conv_result first = convolve(&conv_cases[c], CT_F32), again = convolve(&conv_cases[c], CT_F32);
        assert_memory_equal(first.out, again.out, sizeof(double) * (size_t)first.out_count);
        assert_memory_equal(first.gx, again.gx, sizeof(double) * (size_t)first.x_count);
        assert_memory_equal(first.gw, again.gw, sizeof(double) * (size_t)first.w_count);
        free_result(&first);
        free_result(&again);
    }
}

/* a @ b in dtype (a transposed view when trans_a), as doubles. */
static double *product(int64_t batch, int64_t m, int64_t n, int64_t k, bool trans_a, ct_dtype dtype)
{
    ct_manual_seed(5);
    int64_t a_shape[3] = {batch, trans_a ? k : m, trans_a ? m : k}, b_shape[3] = {batch, k, n};
    ct_tensor *a64 = ct_randn(a_shape, 3, CT_F64, CT_DEVICE_CPU);
    ct_tensor *b64 = ct_randn(b_shape, 3, CT_F64, CT_DEVICE_CPU);
    ct_tensor *a = ct_to_dtype(a64, dtype), *b = ct_to_dtype(b64, dtype);
    ct_tensor *a_used = trans_a ? ct_transpose(a, 1, 2) : ct_retain(a);
    ct_tensor *c = ct_matmul(a_used, b);
    assert_non_null(c);
    double *out = values(c);
    ct_tensor *all[] = {a64, b64, a, b, a_used, c};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ct_release(all[i]);
    return out;
}

static void products_agree_with_float64_on_both_engines(void **state)
{
    (void)state;
    const int64_t shapes[][5] = {{1, 32, 256, 64, 0}, {1, 256, 64, 32, 1}, {3, 70, 90, 110, 0},
                                 {4, 64, 64, 64, 1}, {1, 300, 200, 100, 0},
                                 {1, 512, 512, 1024, 1} /* dnnl_sgemm's size */};
    const char *engines[] = {"auto", "openblas", "onednn"};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int64_t *p = shapes[s];
        int64_t count = p[0] * p[1] * p[2];
        double *want = product(p[0], p[1], p[2], p[3], p[4], CT_F64);
        for (int e = 0; e < 3; e++) {
            ct_cpu_engine_set_for_testing(engines[e]);
            double *got = product(p[0], p[1], p[2], p[3], p[4], CT_F32);
            char name[96];
            snprintf(name, sizeof name, "%lld x %lld x %lld x %lld on %s", (long long)p[0], (long long)p[1],
                     (long long)p[2], (long long)p[3], engines[e]);
            assert_close("product", name, got, want, count);
            free(got);
        }
        free(want);
    }
    ct_cpu_engine_set_for_testing(NULL);
}

static void the_primitive_cache_stays_bounded(void **state)
{
    (void)state;
#ifdef CTORCH_HAVE_ONEDNN
    ct_cpu_engine_set_for_testing("onednn");
    for (int64_t m = 1; m <= 200; m++) free(product(1, m, 3, 2, false, CT_F32));
    ct_cpu_engine_set_for_testing(NULL);
    int size = ct_onednn_cache_size();
    assert_true(size > 0);
    assert_true(size <= 128);
    ct_onednn_cache_clear();
    assert_int_equal(ct_onednn_cache_size(), 0);
#else
    skip();
#endif
}

/* ---- pooling: the CPU's loops against the dialect's kernels (CTORCH_CPU_ENGINE=openblas) ---- */

typedef struct pool_case {
    const char *name;
    int64_t n, c, h, w, kernel[2], stride[2], padding[2];
} pool_case;

/* Planes (n c) of 8 and more take the loops' vector blocks, the rest their plane-by-plane code. */
static const pool_case pool_cases[] = {
    {"digits cnn pool 1", 3, 16, 8, 8, {2, 2}, {2, 2}, {0, 0}},
    {"digits cnn pool 2", 3, 32, 4, 4, {2, 2}, {2, 2}, {0, 0}},
    {"overlapping, padded", 2, 5, 9, 7, {3, 3}, {2, 1}, {1, 1}},
    {"uneven, clipped", 1, 11, 7, 10, {2, 4}, {3, 2}, {1, 2}},
    {"odd planes", 1, 3, 5, 5, {3, 2}, {1, 1}, {1, 0}},
};

/* Values with ties, zeros of both signs, -inf windows, NaN and inf among randn's. */
static ct_tensor *pool_input(const pool_case *k, ct_dtype dtype)
{
    int64_t shape[4] = {k->n, k->c, k->h, k->w}, count = k->n * k->c * k->h * k->w;
    ct_manual_seed(3);
    ct_tensor *r = ct_randn(shape, 4, CT_F64, CT_DEVICE_CPU);
    double *v = values(r);
    for (int64_t i = 0; i < count; i++) {
        if (i % 7 == 0) v[i] = round(v[i]); /* ties */
        if (i % 13 == 0) v[i] = i % 2 ? 0.0 : -0.0;
        if (i % 29 == 0) v[i] = NAN;
        if (i % 31 == 0) v[i] = INFINITY;
    }
    int64_t plane = k->h * k->w;
    for (int64_t i = 0; i < plane && count > 2 * plane; i++) v[2 * plane + i] = -INFINITY; /* a plane of -inf */
    ct_tensor *wide = ct_tensor_from_data(v, CT_F64, shape, 4, CT_DEVICE_CPU);
    ct_tensor *x = ct_to_dtype(wide, dtype);
    assert_non_null(x);
    ct_release(r);
    ct_release(wide);
    free(v);
    return x;
}

typedef struct pool_result {
    double *out, *grad;
    int64_t *indices;
    int64_t out_count, x_count;
} pool_result;

/* Max pooling (op 0, with its indices) or average pooling (1 include_pad, 2 not) of the case and
 * the input's gradient of sum(out * r). */
static pool_result pool(const pool_case *k, int op, ct_dtype dtype)
{
    ct_tensor *x = pool_input(k, dtype), *indices = NULL;
    assert_int_equal(ct_requires_grad_(x, true), CT_OK);
    ct_tensor *out = op == 0 ? ct_max_pool2d_with_indices(x, k->kernel, k->stride, k->padding, &indices)
                             : ct_avg_pool2d(x, k->kernel, k->stride, k->padding, op == 1);
    assert_non_null(out);
    ct_manual_seed(4);
    ct_tensor *r64 = ct_randn(ct_tensor_shape(out), 4, CT_F64, CT_DEVICE_CPU);
    ct_tensor *r = ct_to_dtype(r64, dtype);
    ct_tensor *weighted = ct_mul(out, r);
    ct_tensor *loss = ct_sum(weighted, NULL, 0, false);
    assert_non_null(loss);
    assert_int_equal(ct_backward(loss), CT_OK);
    ct_tensor *grad = ct_grad(x);
    pool_result result = {.out = values(out), .grad = values(grad), .out_count = ct_numel(out),
                          .x_count = ct_numel(x)};
    if (indices) {
        result.indices = malloc(sizeof(int64_t) * (size_t)result.out_count);
        assert_non_null(result.indices);
        assert_int_equal(ct_tensor_to_array(indices, result.indices, sizeof(int64_t) * (size_t)result.out_count),
                         CT_OK);
    }
    ct_tensor *all[] = {x, indices, out, r64, r, weighted, loss, grad};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ct_release(all[i]);
    return result;
}

static uint64_t pool_kernel_launches(void)
{
    const ct_kernel_id kernels[] = {CT_K_max_pool2d_f32, CT_K_max_pool2d_backward_f32, CT_K_avg_pool2d_f32,
                                    CT_K_avg_pool2d_backward_f32, CT_K_max_pool2d_f64,
                                    CT_K_max_pool2d_backward_f64, CT_K_avg_pool2d_f64,
                                    CT_K_avg_pool2d_backward_f64};
    uint64_t count = 0;
    for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++)
        count += ct_backend_launch_count(CT_DEVICE_CPU, kernels[i]);
    return count;
}

/* Equal bits, NaN's included (memcmp of the doubles each value widened to). */
static void assert_same_bits(const char *what, const char *name, const char *dtype, const double *got,
                             const double *want, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        if (memcmp(&got[i], &want[i], sizeof got[i]) != 0)
            fail_msg("%s of '%s' in %s, element %lld: loops %.9g, dialect kernel %.9g", what, name, dtype,
                     (long long)i, got[i], want[i]);
}

static void poolings_are_the_dialect_kernels_bits(void **state)
{
    (void)state;
    const char *ops[] = {"max pooling", "average pooling with the padding", "average pooling without it"};
    const ct_dtype dtypes[] = {CT_F32, CT_F64};
    for (size_t c = 0; c < sizeof pool_cases / sizeof *pool_cases; c++)
        for (int op = 0; op < 3; op++)
            for (int d = 0; d < 2; d++) {
                const pool_case *k = &pool_cases[c];
                char name[128];
                snprintf(name, sizeof name, "%s, %s", k->name, ops[op]);
                ct_cpu_engine_set_for_testing("openblas");
                uint64_t before = pool_kernel_launches();
                pool_result want = pool(k, op, dtypes[d]);
                assert_true(pool_kernel_launches() > before);
                ct_cpu_engine_set_for_testing("auto");
                before = pool_kernel_launches();
                pool_result got = pool(k, op, dtypes[d]);
                if (pool_kernel_launches() != before) fail_msg("'%s' ran a dialect kernel on the CPU", name);
                const char *dtype = ct_dtype_name(dtypes[d]);
                assert_same_bits("output", name, dtype, got.out, want.out, want.out_count);
                assert_same_bits("input gradient", name, dtype, got.grad, want.grad, want.x_count);
                if (op == 0)
                    for (int64_t i = 0; i < want.out_count; i++)
                        if (got.indices[i] != want.indices[i])
                            fail_msg("index %lld of '%s' in %s: loops %lld, dialect kernel %lld", (long long)i,
                                     name, dtype, (long long)got.indices[i], (long long)want.indices[i]);
                pool_result *both[] = {&got, &want};
                for (int i = 0; i < 2; i++) {
                    free(both[i]->out);
                    free(both[i]->grad);
                    free(both[i]->indices);
                }
            }
    ct_cpu_engine_set_for_testing(NULL);
}

/* A captured max and average pooling, forward and backward, replayed on new inputs: the bits of
 * running them. */
static void a_captured_pooling_replays_what_running_it_gives(void **state)
{
    (void)state;
    const pool_case *k = &pool_cases[2];
    ct_tensor *x = pool_input(k, CT_F32);
    ct_tensor *want_max = NULL, *want_avg = NULL, *want_gx = NULL;
    ct_tensor *got_max = NULL, *got_avg = NULL, *gx = NULL;
    ct_graph *graph = ct_graph_new();
    assert_non_null(graph);
    for (int pass = 0; pass < 2; pass++) { /* 0: captured; 1: run on the next input */
        ct_tensor *leaf = ct_detach(x);
        assert_int_equal(ct_requires_grad_(leaf, true), CT_OK);
        if (pass == 0) assert_int_equal(ct_graph_begin(graph, CT_DEVICE_CPU, NULL), CT_OK);
        ct_tensor *m = ct_max_pool2d(leaf, k->kernel, k->stride, k->padding);
        ct_tensor *a = ct_avg_pool2d(leaf, k->kernel, k->stride, k->padding, false);
        ct_tensor *squares = ct_mul(a, a);
        ct_tensor *m_sum = ct_sum(m, NULL, 0, false), *a_sum = ct_sum(squares, NULL, 0, false);
        ct_tensor *loss = ct_add(m_sum, a_sum);
        assert_non_null(loss);
        assert_int_equal(ct_backward(loss), CT_OK);
        ct_release(squares);
        ct_release(m_sum);
        ct_release(a_sum);
        if (pass == 0) {
            assert_int_equal(ct_graph_end(graph), CT_OK);
            got_max = m, got_avg = a, gx = ct_grad(leaf);
            /* the next input, into the captured one's memory */
            ct_tensor *next = ct_mul_scalar(x, -0.5);
            assert_int_equal(ct_copy_(x, next), CT_OK);
            ct_release(next);
            assert_int_equal(ct_graph_replay(graph), CT_OK);
        } else {
            want_max = m, want_avg = a, want_gx = ct_grad(leaf);
        }
        ct_release(loss);
        ct_release(leaf);
    }
    double *v[6] = {values(got_max), values(want_max), values(got_avg), values(want_avg), values(gx),
                    values(want_gx)};
    assert_same_bits("replayed max pooling", k->name, "float32", v[0], v[1], ct_numel(want_max));
    assert_same_bits("replayed average pooling", k->name, "float32", v[2], v[3], ct_numel(want_avg));
    assert_same_bits("replayed input gradient", k->name, "float32", v[4], v[5], ct_numel(want_gx));
    for (int i = 0; i < 6; i++) free(v[i]);
    ct_tensor *all[] = {x, want_max, want_avg, want_gx, got_max, got_avg, gx};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ct_release(all[i]);
    ct_graph_free(graph);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(convolutions_agree_with_float64_on_both_engines),
        cmocka_unit_test(convolutions_are_the_same_bits_run_to_run),
        cmocka_unit_test(products_agree_with_float64_on_both_engines),
        cmocka_unit_test(the_primitive_cache_stays_bounded),
        cmocka_unit_test(poolings_are_the_dialect_kernels_bits),
        cmocka_unit_test(a_captured_pooling_replays_what_running_it_gives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
