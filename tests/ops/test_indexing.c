/* ct_index_select, ct_gather and ct_one_hot follow torch.index_select / torch.gather /
 * F.one_hot over dims, dtypes, int32 and int64 indices, strided views and empty tensors;
 * checked against plain C references. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctorch.h"
#include "tensor/tensor_internal.h"

static ct_tensor *make(ct_dtype dtype, const int64_t *shape, int ndim, int seed)
{
    int64_t n = ct_shape_numel(shape, ndim);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = dtype == CT_BOOL ? (double)((i + seed) % 3 == 0)
                                                            : (double)((i * 5 + seed) % 97);
    ct_tensor *f = ct_tensor_from_data(v, CT_F64, shape, ndim, CT_DEVICE_CPU);
    ct_tensor *t = ct_to_dtype(f, dtype);
    ct_release(f);
    free(v);
    assert_non_null(t);
    return t;
}

/* An index tensor of dtype holding values[0..n) with the given shape. */
static ct_tensor *make_index(ct_dtype dtype, const int64_t *values, const int64_t *shape, int ndim)
{
    int64_t n = ct_shape_numel(shape, ndim);
    ct_tensor *l = ct_tensor_from_data(values, CT_I64, shape, ndim, CT_DEVICE_CPU);
    ct_tensor *t = ct_to_dtype(l, dtype);
    ct_release(l);
    assert_non_null(t);
    assert_int_equal(ct_numel(t), n);
    return t;
}

static double *values_of(const ct_tensor *t)
{
    int64_t n = ct_numel(t);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    ct_tensor *d = ct_to_dtype(t, CT_F64);
    assert_int_equal(ct_tensor_to_array(d, v, (size_t)n * sizeof *v), CT_OK);
    ct_release(d);
    return v;
}

/* Row-major flat position of coords in shape. */
static int64_t flat(const int64_t *coords, const int64_t *shape, int ndim)
{
    int64_t f = 0;
    for (int d = 0; d < ndim; d++) f = f * shape[d] + coords[d];
    return f;
}

/* gather's reference: out[c] = a[c with c[dim] = index[c]], over index's shape. */
static void check_gather(const ct_tensor *a, int dim, const ct_tensor *index, const ct_tensor *out)
{
    int ndim = ct_tensor_ndim(a);
    const int64_t *is = ct_tensor_shape(index), *as = ct_tensor_shape(a);
    assert_int_equal(ct_tensor_ndim(out), ndim);
    assert_memory_equal(ct_tensor_shape(out), is, sizeof(int64_t) * (size_t)ndim);
    assert_int_equal(ct_tensor_dtype(out), ct_tensor_dtype(a));
    double *av = values_of(a), *iv = values_of(index), *ov = values_of(out);
    int64_t n = ct_numel(index), coords[CT_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        int64_t rest = i;
        for (int d = ndim - 1; d >= 0; d--) {
            coords[d] = rest % is[d];
            rest /= is[d];
        }
        coords[dim] = (int64_t)iv[i];
        double want = av[flat(coords, as, ndim)];
        if (ov[i] != want) fail_msg("element %lld: %g != %g", (long long)i, ov[i], want);
    }
    free(av);
    free(iv);
    free(ov);
}

/* index_select's reference: out[c] = a[c with c[dim] = index[c[dim]]]. */
static void check_index_select(const ct_tensor *a, int dim, const ct_tensor *index, const ct_tensor *out)
{
    int ndim = ct_tensor_ndim(a);
    const int64_t *as = ct_tensor_shape(a), *os = ct_tensor_shape(out);
    assert_int_equal(ct_tensor_ndim(out), ndim);
    for (int d = 0; d < ndim; d++) assert_int_equal(os[d], d == dim ? ct_numel(index) : as[d]);
    double *av = values_of(a), *iv = values_of(index), *ov = values_of(out);
    int64_t n = ct_numel(out), coords[CT_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        int64_t rest = i;
        for (int d = ndim - 1; d >= 0; d--) {
            coords[d] = rest % os[d];
            rest /= os[d];
        }
        coords[dim] = (int64_t)iv[coords[dim]];
        double want = av[flat(coords, as, ndim)];
        if (ov[i] != want) fail_msg("element %lld: %g != %g", (long long)i, ov[i], want);
    }
    free(av);
    free(iv);
    free(ov);
}

static const ct_dtype DATA_DTYPES[] = {CT_F32, CT_F64, CT_I32, CT_I64, CT_U8, CT_BOOL};
static const ct_dtype INDEX_DTYPES[] = {CT_I64, CT_I32};

static void index_select_along_every_dim_with_int64_and_int32_indices(void **state)
{
    (void)state;
    int64_t shape[3] = {4, 5, 6};
    int64_t picks[7] = {3, 0, 0, 2, 1, 3, 3}, pick_shape[1] = {7};
    for (size_t t = 0; t < sizeof DATA_DTYPES / sizeof *DATA_DTYPES; t++)
        for (size_t it = 0; it < 2; it++) {
            ct_tensor *a = make(DATA_DTYPES[t], shape, 3, (int)t);
            ct_tensor *index = make_index(INDEX_DTYPES[it], picks, pick_shape, 1);
            for (int dim = -3; dim < 3; dim++) {
                ct_tensor *out = ct_index_select(a, dim, index);
                assert_non_null(out);
                check_index_select(a, dim < 0 ? dim + 3 : dim, index, out);
                ct_release(out);
            }
            ct_release(index);
            ct_release(a);
        }
}

static void index_select_reads_strided_inputs_and_indices(void **state)
{
    (void)state;
    int64_t shape[2] = {6, 8}, t_shape[2] = {8, 6}, t_strides[2] = {1, 8};
    ct_tensor *a = make(CT_F32, shape, 2, 1);
    ct_tensor *at = ct_tensor_view_of(a, 2, t_shape, t_strides, 0);
    int64_t values[10] = {5, 9, 0, 9, 2, 9, 4, 9, 1, 9}, vshape[1] = {10};
    ct_tensor *index_base = make_index(CT_I32, values, vshape, 1);
    int64_t every_other_shape[1] = {5}, every_other_stride[1] = {2};
    ct_tensor *index = ct_tensor_view_of(index_base, 1, every_other_shape, every_other_stride, 0);
    for (int dim = 0; dim < 2; dim++) {
        ct_tensor *out = ct_index_select(at, dim, index);
        assert_non_null(out);
        check_index_select(at, dim, index, out);
        ct_release(out);
    }
    ct_release(index);
    ct_release(index_base);
    ct_release(at);
    ct_release(a);
}

static void index_select_with_empty_and_0d_indices(void **state)
{
    (void)state;
    int64_t shape[2] = {3, 4}, none[1] = {0}, expected[2] = {3, 0};
    ct_tensor *a = make(CT_F64, shape, 2, 2);
    ct_tensor *empty = ct_empty(none, 1, CT_I64, CT_DEVICE_CPU);
    ct_tensor *out = ct_index_select(a, 1, empty);
    assert_non_null(out);
    assert_memory_equal(ct_tensor_shape(out), expected, sizeof expected);
    ct_release(out);
    int64_t two = 2;
    ct_tensor *scalar = make_index(CT_I64, &two, NULL, 0);
    out = ct_index_select(a, 0, scalar);
    int64_t one_row[2] = {1, 4};
    assert_non_null(out);
    assert_memory_equal(ct_tensor_shape(out), one_row, sizeof one_row);
    double *v = values_of(out), *av = values_of(a);
    for (int j = 0; j < 4; j++) assert_true(v[j] == av[2 * 4 + j]);
    free(v);
    free(av);
    ct_release(out);
    ct_release(scalar);
    ct_release(empty);
    ct_release(a);
}

static void gather_along_every_dim(void **state)
{
    (void)state;
    int64_t shape[3] = {3, 4, 5};
    /* The index is smaller than a in the other dims and any size along dim. */
    for (size_t t = 0; t < sizeof DATA_DTYPES / sizeof *DATA_DTYPES; t++)
        for (size_t it = 0; it < 2; it++)
            for (int dim = 0; dim < 3; dim++) {
                int64_t ishape[3] = {2, 3, 4};
                ishape[dim] = 6;
                int64_t n = ct_shape_numel(ishape, 3), values[6 * 3 * 4];
                for (int64_t i = 0; i < n; i++) values[i] = (i * 7 + 3) % shape[dim];
                ct_tensor *a = make(DATA_DTYPES[t], shape, 3, (int)t);
                ct_tensor *index = make_index(INDEX_DTYPES[it], values, ishape, 3);
                ct_tensor *out = ct_gather(a, dim - 3, index);
                assert_non_null(out);
                check_gather(a, dim, index, out);
                ct_release(out);
                ct_release(index);
                ct_release(a);
            }
}

static void gather_of_strided_views_and_1d_tensors(void **state)
{
    (void)state;
    /* 1-D: out[i] = a[index[i]]. */
    int64_t n[1] = {50}, values[20], ishape[1] = {20};
    for (int i = 0; i < 20; i++) values[i] = (i * 13) % 50;
    ct_tensor *a = make(CT_I64, n, 1, 3), *index = make_index(CT_I64, values, ishape, 1);
    ct_tensor *out = ct_gather(a, 0, index);
    check_gather(a, 0, index, out);
    ct_release(out);
    /* a transposed and an index that is a transposed view. */
    int64_t shape[2] = {4, 6}, ts[2] = {6, 4}, tstr[2] = {1, 6};
    ct_tensor *m = make(CT_F32, shape, 2, 1), *mt = ct_tensor_view_of(m, 2, ts, tstr, 0);
    int64_t iv[12], ib_shape[2] = {3, 4}, it_shape[2] = {4, 3}, it_str[2] = {1, 4};
    for (int i = 0; i < 12; i++) iv[i] = (i * 5) % 4;
    ct_tensor *ib = make_index(CT_I32, iv, ib_shape, 2);
    ct_tensor *it = ct_tensor_view_of(ib, 2, it_shape, it_str, 0); /* [4, 3], values < 4 */
    out = ct_gather(mt, 1, it);
    assert_non_null(out);
    check_gather(mt, 1, it, out);
    ct_release(out);
    ct_release(it);
    ct_release(ib);
    ct_release(mt);
    ct_release(m);
    ct_release(index);
    ct_release(a);
}

static void gather_of_a_large_index_spans_many_check_chunks(void **state)
{
    (void)state;
    int64_t shape[2] = {300, 40}, ishape[2] = {300, 100};
    int64_t count = 300 * 100, *values = malloc((size_t)count * sizeof *values);
    for (int64_t i = 0; i < count; i++) values[i] = (i * 31) % 40;
    ct_tensor *a = make(CT_F64, shape, 2, 4), *index = make_index(CT_I64, values, ishape, 2);
    ct_tensor *out = ct_gather(a, 1, index);
    assert_non_null(out);
    check_gather(a, 1, index, out);
    ct_release(out);
    ct_release(index);
    ct_release(a);
    free(values);
}

static void gather_with_an_empty_index(void **state)
{
    (void)state;
    int64_t shape[2] = {3, 4}, ishape[2] = {0, 4};
    ct_tensor *a = make(CT_F32, shape, 2, 1), *index = ct_empty(ishape, 2, CT_I64, CT_DEVICE_CPU);
    ct_tensor *out = ct_gather(a, 0, index);
    assert_non_null(out);
    assert_memory_equal(ct_tensor_shape(out), ishape, sizeof ishape);
    ct_release(out);
    ct_release(index);
    ct_release(a);
}

/* one_hot's reference: out[i][c] = index[i] == c. */
static void check_one_hot(const ct_tensor *index, int64_t classes, const ct_tensor *out)
{
    int nd = ct_tensor_ndim(index);
    assert_int_equal(ct_tensor_dtype(out), CT_I64);
    assert_int_equal(ct_tensor_ndim(out), nd + 1);
    assert_memory_equal(ct_tensor_shape(out), ct_tensor_shape(index), sizeof(int64_t) * (size_t)nd);
    assert_int_equal(ct_tensor_shape(out)[nd], classes);
    double *iv = values_of(index), *ov = values_of(out);
    for (int64_t i = 0; i < ct_numel(index); i++)
        for (int64_t c = 0; c < classes; c++)
            assert_true(ov[i * classes + c] == (iv[i] == (double)c ? 1.0 : 0.0));
    free(iv);
    free(ov);
}

static void one_hot_with_given_and_inferred_class_counts(void **state)
{
    (void)state;
    int64_t values[6] = {0, 3, 1, 3, 2, 0}, shape[2] = {2, 3}, flat_shape[1] = {6};
    for (size_t it = 0; it < 2; it++) {
        ct_tensor *index = make_index(INDEX_DTYPES[it], values, shape, 2);
        ct_tensor *inferred = ct_one_hot(index, -1), *given = ct_one_hot(index, 7);
        assert_non_null(inferred);
        assert_non_null(given);
        check_one_hot(index, 4, inferred);
        check_one_hot(index, 7, given);
        ct_release(inferred);
        ct_release(given);
        ct_release(index);
        index = make_index(INDEX_DTYPES[it], values, flat_shape, 1);
        ct_tensor *out = ct_one_hot(index, 4);
        check_one_hot(index, 4, out);
        ct_release(out);
        ct_release(index);
    }
}

static void one_hot_of_strided_large_and_empty_indices(void **state)
{
    (void)state;
    int64_t values[6] = {0, 3, 1, 3, 2, 0}, shape[2] = {2, 3}, ts[2] = {3, 2}, tstr[2] = {1, 3};
    ct_tensor *base = make_index(CT_I64, values, shape, 2);
    ct_tensor *t = ct_tensor_view_of(base, 2, ts, tstr, 0);
    ct_tensor *out = ct_one_hot(t, -1);
    check_one_hot(t, 4, out);
    ct_release(out);
    ct_release(t);
    ct_release(base);

    int64_t count = 20000, *many = malloc((size_t)count * sizeof *many), mshape[1] = {count};
    for (int64_t i = 0; i < count; i++) many[i] = (i * 7) % 10;
    ct_tensor *big = make_index(CT_I32, many, mshape, 1);
    out = ct_one_hot(big, -1);
    check_one_hot(big, 10, out);
    ct_release(out);
    ct_release(big);
    free(many);

    int64_t none[1] = {0}, expected[2] = {0, 5};
    ct_tensor *empty = ct_empty(none, 1, CT_I64, CT_DEVICE_CPU);
    out = ct_one_hot(empty, 5);
    assert_non_null(out);
    assert_memory_equal(ct_tensor_shape(out), expected, sizeof expected);
    ct_release(out);
    ct_release(empty);

    int64_t two = 2;
    ct_tensor *scalar = make_index(CT_I64, &two, NULL, 0);
    out = ct_one_hot(scalar, 3);
    int64_t v[3];
    assert_int_equal(ct_tensor_ndim(out), 1);
    assert_int_equal(ct_tensor_to_array(out, v, sizeof v), CT_OK);
    assert_true(v[0] == 0 && v[1] == 0 && v[2] == 1);
    ct_release(out);
    ct_release(scalar);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(index_select_along_every_dim_with_int64_and_int32_indices),
        cmocka_unit_test(index_select_reads_strided_inputs_and_indices),
        cmocka_unit_test(index_select_with_empty_and_0d_indices),
        cmocka_unit_test(gather_along_every_dim),
        cmocka_unit_test(gather_of_strided_views_and_1d_tensors),
        cmocka_unit_test(gather_of_a_large_index_spans_many_check_chunks),
        cmocka_unit_test(gather_with_an_empty_index),
        cmocka_unit_test(one_hot_with_given_and_inferred_class_counts),
        cmocka_unit_test(one_hot_of_strided_large_and_empty_indices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
