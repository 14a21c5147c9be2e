/* ct_matmul follows torch.matmul over every shape case (1-D to batched N-D with broadcasting),
 * any strides (transposed operands go to BLAS without a copy), float32/float64 and the integer
 * dtypes, and empty tensors; checked against a plain C reference. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctorch.h"
#include "tensor/tensor_internal.h"

/* ---- helpers ---- */

/* A contiguous tensor of small integer-valued numbers (exact in every dtype), varied by seed. */
static ct_tensor *make(ct_dtype dtype, const int64_t *shape, int ndim, int seed)
{
    int64_t n = ct_shape_numel(shape, ndim);
    double *values = malloc((size_t)(n > 0 ? n : 1) * sizeof *values);
    for (int64_t i = 0; i < n; i++) values[i] = (double)((i * 7 + seed * 3) % 11) - 5.0;
    if (dtype == CT_U8)
        for (int64_t i = 0; i < n; i++) values[i] += 5.0;
    ct_tensor *f = ct_tensor_from_data(values, CT_F64, shape, ndim, CT_DEVICE_CPU);
    ct_tensor *t = ct_to_dtype(f, dtype);
    ct_release(f);
    free(values);
    assert_non_null(t);
    return t;
}

/* t's elements in row-major order, as doubles (malloc'ed). */
static double *values_of(const ct_tensor *t)
{
    int64_t n = ct_numel(t);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    ct_tensor *d = ct_to_dtype(t, CT_F64);
    assert_non_null(d);
    assert_int_equal(ct_tensor_to_array(d, v, (size_t)n * sizeof *v), CT_OK);
    ct_release(d);
    return v;
}

/* torch.matmul in plain C over row-major doubles: out must have room for the result; its shape
 * goes to out_shape / out_ndim. */
static void reference_matmul(const double *a, const int64_t *as, int an, const double *b,
                             const int64_t *bs, int bn, double *out, int64_t *out_shape,
                             int *out_ndim)
{
    int64_t m = an == 1 ? 1 : as[an - 2], k = as[an - 1];
    int64_t n = bn == 1 ? 1 : bs[bn - 1];
    int a_batch = an > 2 ? an - 2 : 0, b_batch = bn > 2 ? bn - 2 : 0;
    int nb = a_batch > b_batch ? a_batch : b_batch;
    int64_t batch[CT_MAX_DIMS];
    for (int d = 0; d < nb; d++) {
        int ad = a_batch - nb + d, bd = b_batch - nb + d;
        int64_t sa = ad >= 0 ? as[ad] : 1, sb = bd >= 0 ? bs[bd] : 1;
        batch[d] = sa == 1 ? sb : sa;
    }
    int nd = 0;
    for (int d = 0; d < nb; d++) out_shape[nd++] = batch[d];
    if (an > 1) out_shape[nd++] = m;
    if (bn > 1) out_shape[nd++] = n;
    *out_ndim = nd;
    int64_t batches = ct_shape_numel(batch, nb);
    for (int64_t bi = 0; bi < batches; bi++) {
        /* Each operand's matrix index, broadcasting its batch dims. */
        int64_t rest = bi, a_index = 0, b_index = 0, a_scale = 1, b_scale = 1;
        for (int d = nb - 1; d >= 0; d--) {
            int64_t coord = rest % batch[d];
            rest /= batch[d];
            int ad = a_batch - nb + d, bd = b_batch - nb + d;
            if (ad >= 0) {
                a_index += (as[ad] == 1 ? 0 : coord) * a_scale;
                a_scale *= as[ad];
            }
            if (bd >= 0) {
                b_index += (bs[bd] == 1 ? 0 : coord) * b_scale;
                b_scale *= bs[bd];
            }
        }
        const double *am = a + a_index * m * k, *bm = b + b_index * k * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double sum = 0;
                for (int64_t kk = 0; kk < k; kk++) sum += am[i * k + kk] * bm[kk * n + j];
                out[(bi * m + i) * n + j] = sum;
            }
    }
}

/* ct_matmul(a, b) has the reference's shape and values (tolerance relative to k for floats;
 * exact for integers, wrapped to 8 bits for uint8). */
static void check_matmul(const ct_tensor *a, const ct_tensor *b)
{
    ct_tensor *c = ct_matmul(a, b);
    assert_non_null(c);
    assert_int_equal(ct_tensor_dtype(c), ct_tensor_dtype(a));
    double *av = values_of(a), *bv = values_of(b);
    int64_t shape[CT_MAX_DIMS];
    int ndim = 0;
    int64_t capacity = 1;
    for (int d = 0; d < ct_tensor_ndim(c); d++) capacity *= ct_tensor_shape(c)[d];
    double *expected = malloc((size_t)(capacity > 0 ? capacity : 1) * sizeof *expected);
    reference_matmul(av, ct_tensor_shape(a), ct_tensor_ndim(a), bv, ct_tensor_shape(b),
                     ct_tensor_ndim(b), expected, shape, &ndim);
    assert_int_equal(ct_tensor_ndim(c), ndim);
    for (int d = 0; d < ndim; d++) assert_int_equal(ct_tensor_shape(c)[d], shape[d]);
    double *got = values_of(c);
    ct_dtype dtype = ct_tensor_dtype(c);
    for (int64_t i = 0; i < capacity; i++) {
        double want = expected[i];
        if (dtype == CT_U8) want = fmod(want, 256.0);
        if (ct_dtype_is_floating(dtype)) {
            double tolerance = (dtype == CT_F32 ? 1e-5 : 1e-12) * (1.0 + fabs(want)) * 8;
            if (fabs(got[i] - want) > tolerance) fail_msg("element %lld: %g != %g", (long long)i, got[i], want);
        } else if (got[i] != want) {
            fail_msg("element %lld: %g != %g", (long long)i, got[i], want);
        }
    }
    free(av);
    free(bv);
    free(expected);
    free(got);
    ct_release(c);
}

static void check_shapes(ct_dtype dtype, const int64_t *as, int an, const int64_t *bs, int bn)
{
    ct_tensor *a = make(dtype, as, an, 1), *b = make(dtype, bs, bn, 2);
    check_matmul(a, b);
    ct_release(a);
    ct_release(b);
}

/* A view of t with its last two dims swapped (what ct_transpose(t, -2, -1) gives). */
static ct_tensor *transposed(const ct_tensor *t)
{
    int nd = ct_tensor_ndim(t);
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    memcpy(shape, ct_tensor_shape(t), sizeof(int64_t) * (size_t)nd);
    memcpy(strides, ct_tensor_strides(t), sizeof(int64_t) * (size_t)nd);
    int64_t s = shape[nd - 1];
    shape[nd - 1] = shape[nd - 2];
    shape[nd - 2] = s;
    s = strides[nd - 1];
    strides[nd - 1] = strides[nd - 2];
    strides[nd - 2] = s;
    return ct_tensor_view_of(t, nd, shape, strides, ct_tensor_offset(t));
}

static uint64_t allocator_requests(void)
{
    ct_memory_stats stats;
    assert_int_equal(ct_memory_stats_get(CT_DEVICE_CPU, &stats), CT_OK);
    return stats.device_allocations + stats.cache_hits;
}

static const ct_dtype ALL_DTYPES[] = {CT_F32, CT_F64, CT_I32, CT_I64, CT_U8};

/* ---- shape cases ---- */

static void vector_dot_vector_gives_a_0d_tensor(void **state)
{
    (void)state;
    int64_t s[1] = {7};
    for (size_t i = 0; i < sizeof ALL_DTYPES / sizeof *ALL_DTYPES; i++) check_shapes(ALL_DTYPES[i], s, 1, s, 1);
    ct_tensor *a = make(CT_F32, s, 1, 1);
    ct_tensor *c = ct_matmul(a, a);
    assert_int_equal(ct_tensor_ndim(c), 0);
    ct_release(c);
    ct_release(a);
}

static void matrix_times_matrix(void **state)
{
    (void)state;
    int64_t as[2] = {5, 7}, bs[2] = {7, 3};
    for (size_t i = 0; i < sizeof ALL_DTYPES / sizeof *ALL_DTYPES; i++) check_shapes(ALL_DTYPES[i], as, 2, bs, 2);
    int64_t big_a[2] = {67, 129}, big_b[2] = {129, 33};
    check_shapes(CT_F32, big_a, 2, big_b, 2);
    check_shapes(CT_F64, big_a, 2, big_b, 2);
}

static void vector_times_matrix_and_matrix_times_vector_drop_the_added_dim(void **state)
{
    (void)state;
    int64_t v[1] = {4}, m[2] = {4, 6}, mt[2] = {6, 4};
    for (size_t i = 0; i < sizeof ALL_DTYPES / sizeof *ALL_DTYPES; i++) {
        check_shapes(ALL_DTYPES[i], v, 1, m, 2);  /* [4] @ [4, 6] -> [6] */
        check_shapes(ALL_DTYPES[i], mt, 2, v, 1); /* [6, 4] @ [4] -> [6] */
    }
}

static void batched_with_vectors(void **state)
{
    (void)state;
    int64_t v[1] = {4}, batched[3] = {3, 4, 5}, batched_t[3] = {3, 5, 4};
    for (size_t i = 0; i < sizeof ALL_DTYPES / sizeof *ALL_DTYPES; i++) {
        check_shapes(ALL_DTYPES[i], v, 1, batched, 3);   /* -> [3, 5] */
        check_shapes(ALL_DTYPES[i], batched_t, 3, v, 1); /* -> [3, 5] */
    }
}

static void batch_dims_broadcast(void **state)
{
    (void)state;
    int64_t a4[4] = {2, 1, 3, 4}, b3[3] = {5, 4, 2};
    int64_t a3[3] = {6, 3, 4}, b2[2] = {4, 2}, a2[2] = {3, 4}, b4[4] = {2, 3, 4, 2};
    int64_t a5[5] = {2, 1, 3, 2, 3}, b5[5] = {1, 4, 1, 3, 2};
    for (size_t i = 0; i < sizeof ALL_DTYPES / sizeof *ALL_DTYPES; i++) {
        check_shapes(ALL_DTYPES[i], a4, 4, b3, 3); /* -> [2, 5, 3, 2] */
        check_shapes(ALL_DTYPES[i], a3, 3, b2, 2); /* -> [6, 3, 2] */
        check_shapes(ALL_DTYPES[i], a2, 2, b4, 4); /* -> [2, 3, 3, 2] */
        check_shapes(ALL_DTYPES[i], a5, 5, b5, 5); /* -> [2, 4, 3, 2, 2] */
    }
    int64_t out_shape[4] = {2, 5, 3, 2};
    ct_tensor *a = make(CT_F32, a4, 4, 1), *b = make(CT_F32, b3, 3, 2);
    ct_tensor *c = ct_matmul(a, b);
    assert_int_equal(ct_tensor_ndim(c), 4);
    assert_memory_equal(ct_tensor_shape(c), out_shape, sizeof out_shape);
    ct_release(c);
    ct_release(a);
    ct_release(b);
}

static void many_small_batch_matrices(void **state)
{
    (void)state;
    int64_t as[3] = {600, 8, 9}, bs[3] = {600, 9, 7}, shared[2] = {9, 7};
    check_shapes(CT_F32, as, 3, bs, 3);
    check_shapes(CT_F64, as, 3, bs, 3);
    check_shapes(CT_F32, as, 3, shared, 2);
}

/* ---- strides ---- */

static void transposed_operands_give_the_same_result_without_a_copy(void **state)
{
    (void)state;
    for (int dtype = CT_F32; dtype <= CT_F64; dtype++) {
        int64_t as[2] = {33, 17}, bts[2] = {21, 17}, ats[2] = {17, 33}, bs[2] = {17, 21};
        ct_tensor *a = make(dtype, as, 2, 1), *bt_base = make(dtype, bts, 2, 2);
        ct_tensor *at_base = make(dtype, ats, 2, 3), *b = make(dtype, bs, 2, 4);
        ct_tensor *bt = transposed(bt_base), *at = transposed(at_base); /* [17, 21], [33, 17] */
        ct_tensor *pairs[4][2] = {{a, bt}, {at, b}, {at, bt}, {a, b}};
        for (int i = 0; i < 4; i++) {
            uint64_t before = allocator_requests();
            ct_tensor *c = ct_matmul(pairs[i][0], pairs[i][1]);
            assert_non_null(c);
            /* Only the output was allocated: no operand was copied. */
            assert_int_equal(allocator_requests() - before, 1);
            ct_release(c);
            check_matmul(pairs[i][0], pairs[i][1]);
        }
        ct_release(bt);
        ct_release(at);
        ct_release(a);
        ct_release(b);
        ct_release(bt_base);
        ct_release(at_base);
    }
}

static void batched_transposed_and_broadcast_operands_are_not_copied(void **state)
{
    (void)state;
    int64_t as[4] = {2, 1, 3, 4}, bts[3] = {5, 2, 4};
    ct_tensor *a = make(CT_F32, as, 4, 1), *bt_base = make(CT_F32, bts, 3, 2);
    ct_tensor *b = transposed(bt_base); /* [5, 4, 2] with strides (8, 1, 4) */
    /* A [3, 4] matrix expanded over a batch of 6 (batch stride 0). */
    int64_t ms[2] = {3, 4}, es[3] = {6, 3, 4}, estr[3] = {0, 4, 1}, bbs[3] = {6, 4, 2};
    ct_tensor *m = make(CT_F32, ms, 2, 3), *bb = make(CT_F32, bbs, 3, 4);
    ct_tensor *expanded = ct_tensor_view_of(m, 3, es, estr, 0);
    ct_tensor *pairs[2][2] = {{a, b}, {expanded, bb}};
    for (int i = 0; i < 2; i++) {
        uint64_t before = allocator_requests();
        ct_tensor *c = ct_matmul(pairs[i][0], pairs[i][1]);
        assert_non_null(c);
        assert_int_equal(allocator_requests() - before, 1);
        ct_release(c);
        check_matmul(pairs[i][0], pairs[i][1]);
    }
    ct_release(expanded);
    ct_release(m);
    ct_release(bb);
    ct_release(b);
    ct_release(bt_base);
    ct_release(a);
}

static void non_contiguous_slices(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof ALL_DTYPES / sizeof *ALL_DTYPES; t++) {
        ct_dtype dtype = ALL_DTYPES[t];
        /* Columns 2..7 of a [5, 10] matrix (row stride 10, offset 2): BLAS reads it in place. */
        int64_t wide[2] = {5, 10}, tall[2] = {12, 4};
        ct_tensor *w = make(dtype, wide, 2, 1), *h = make(dtype, tall, 2, 2);
        int64_t cols_shape[2] = {5, 6}, cols_strides[2] = {10, 1};
        ct_tensor *cols = ct_tensor_view_of(w, 2, cols_shape, cols_strides, 2);
        /* Every other row of a [12, 4] matrix: [6, 4] with row stride 8. */
        int64_t rows_shape[2] = {6, 4}, rows_strides[2] = {8, 1};
        ct_tensor *rows = ct_tensor_view_of(h, 2, rows_shape, rows_strides, 0);
        check_matmul(cols, rows);
        /* Every other column of the [5, 10] matrix: column stride 2, which BLAS cannot take. */
        int64_t even_shape[2] = {5, 5}, even_strides[2] = {10, 2}, sq[2] = {5, 3};
        ct_tensor *even = ct_tensor_view_of(w, 2, even_shape, even_strides, 1);
        ct_tensor *s = make(dtype, sq, 2, 3);
        check_matmul(even, s);
        /* Its transpose has strides (2, 10): neither layout BLAS takes, so it is copied. */
        ct_tensor *even_t = transposed(even);
        check_matmul(even_t, s);
        ct_release(even_t);
        ct_release(even);
        ct_release(s);
        ct_release(cols);
        ct_release(rows);
        ct_release(w);
        ct_release(h);
    }
}

static void strided_vectors_and_batches(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof ALL_DTYPES / sizeof *ALL_DTYPES; t++) {
        ct_dtype dtype = ALL_DTYPES[t];
        int64_t flat[1] = {24}, mat[2] = {8, 5};
        ct_tensor *v = make(dtype, flat, 1, 1), *m = make(dtype, mat, 2, 2);
        int64_t vs[1] = {8}, vstr[1] = {3};
        ct_tensor *sparse = ct_tensor_view_of(v, 1, vs, vstr, 1); /* every third element */
        check_matmul(sparse, m);
        check_matmul(sparse, sparse);
        ct_tensor *mt = transposed(m); /* [5, 8] */
        check_matmul(mt, sparse);
        /* Every other matrix of a batch of 6: batch stride 2 * 4 * 3. */
        int64_t batch[3] = {6, 4, 3}, sel[3] = {3, 4, 3}, sel_str[3] = {24, 3, 1}, other[3] = {3, 3, 2};
        ct_tensor *bt = make(dtype, batch, 3, 3), *o = make(dtype, other, 3, 4);
        ct_tensor *every_other = ct_tensor_view_of(bt, 3, sel, sel_str, 12);
        check_matmul(every_other, o);
        ct_release(every_other);
        ct_release(bt);
        ct_release(o);
        ct_release(mt);
        ct_release(sparse);
        ct_release(v);
        ct_release(m);
    }
}

/* ---- dtypes ---- */

static void integer_sums_wrap_around_like_pytorch(void **state)
{
    (void)state;
    uint8_t a[3] = {200, 100, 7}, b[3] = {2, 3, 5}; /* 400 + 300 + 35 = 735 = 2 * 256 + 223 */
    int64_t s[1] = {3};
    ct_tensor *ta = ct_tensor_from_data(a, CT_U8, s, 1, CT_DEVICE_CPU);
    ct_tensor *tb = ct_tensor_from_data(b, CT_U8, s, 1, CT_DEVICE_CPU);
    ct_tensor *c = ct_matmul(ta, tb);
    int64_t value = 0;
    assert_int_equal(ct_item_int64(c, &value), CT_OK);
    assert_int_equal(value, 223);
    ct_release(c);
    ct_release(ta);
    ct_release(tb);
    int64_t big[2] = {(int64_t)1 << 40, 3}, ones[2] = {1 << 20, 1};
    int64_t two[1] = {2};
    ct_tensor *x = ct_tensor_from_data(big, CT_I64, two, 1, CT_DEVICE_CPU);
    ct_tensor *y = ct_tensor_from_data(ones, CT_I64, two, 1, CT_DEVICE_CPU);
    c = ct_matmul(x, y);
    assert_int_equal(ct_item_int64(c, &value), CT_OK);
    assert_int_equal(value, ((int64_t)1 << 60) + 3); /* exact in int64, not rounded through double */
    ct_release(c);
    ct_release(x);
    ct_release(y);
}

/* ---- empty ---- */

static void empty_inner_dim_gives_zeros(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof ALL_DTYPES / sizeof *ALL_DTYPES; t++) {
        int64_t as[2] = {3, 0}, bs[2] = {0, 4};
        ct_tensor *a = ct_empty(as, 2, ALL_DTYPES[t], CT_DEVICE_CPU);
        ct_tensor *b = ct_empty(bs, 2, ALL_DTYPES[t], CT_DEVICE_CPU);
        ct_tensor *c = ct_matmul(a, b);
        assert_non_null(c);
        assert_int_equal(ct_numel(c), 12);
        double *v = values_of(c);
        for (int i = 0; i < 12; i++) assert_true(v[i] == 0.0);
        free(v);
        ct_release(c);
        ct_release(a);
        ct_release(b);
    }
    int64_t e[1] = {0};
    ct_tensor *v = ct_empty(e, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *dot = ct_matmul(v, v);
    double value = -1;
    assert_int_equal(ct_item(dot, &value), CT_OK);
    assert_true(value == 0.0);
    ct_release(dot);
    ct_release(v);
}

static void empty_outer_dims_give_empty_results(void **state)
{
    (void)state;
    int64_t as[2] = {0, 3}, bs[2] = {3, 4}, batch_a[3] = {0, 2, 3}, bn[2] = {3, 0};
    int64_t out0[2] = {0, 4}, out_batch[3] = {0, 2, 4}, outn[2] = {0, 0};
    ct_tensor *a = ct_empty(as, 2, CT_F32, CT_DEVICE_CPU), *b = make(CT_F32, bs, 2, 1);
    ct_tensor *ba = ct_empty(batch_a, 3, CT_F32, CT_DEVICE_CPU);
    ct_tensor *b0 = ct_empty(bn, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *c = ct_matmul(a, b), *cb = ct_matmul(ba, b), *cn = ct_matmul(a, b0);
    assert_non_null(c);
    assert_non_null(cb);
    assert_non_null(cn);
    assert_memory_equal(ct_tensor_shape(c), out0, sizeof out0);
    assert_memory_equal(ct_tensor_shape(cb), out_batch, sizeof out_batch);
    assert_memory_equal(ct_tensor_shape(cn), outn, sizeof outn);
    ct_release(c);
    ct_release(cb);
    ct_release(cn);
    ct_release(a);
    ct_release(b);
    ct_release(ba);
    ct_release(b0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vector_dot_vector_gives_a_0d_tensor),
        cmocka_unit_test(matrix_times_matrix),
        cmocka_unit_test(vector_times_matrix_and_matrix_times_vector_drop_the_added_dim),
        cmocka_unit_test(batched_with_vectors),
        cmocka_unit_test(batch_dims_broadcast),
        cmocka_unit_test(many_small_batch_matrices),
        cmocka_unit_test(transposed_operands_give_the_same_result_without_a_copy),
        cmocka_unit_test(batched_transposed_and_broadcast_operands_are_not_copied),
        cmocka_unit_test(non_contiguous_slices),
        cmocka_unit_test(strided_vectors_and_batches),
        cmocka_unit_test(integer_sums_wrap_around_like_pytorch),
        cmocka_unit_test(empty_inner_dim_gives_zeros),
        cmocka_unit_test(empty_outer_dims_give_empty_results),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
