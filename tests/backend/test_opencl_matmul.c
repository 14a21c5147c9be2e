/* matmul on opencl:0 goes through CLBlast and gives OpenBLAS's results on the CPU: plain,
 * with transposed operands (passed as transposed, not copied), batched, with broadcast batch
 * dims, vectors, offsets into storage, float32 and float64. Float32 within 1e-4 relative to
 * the largest product term, float64 within 1e-12 (summation orders differ). */
#include "opencl_test.h"

/* A CPU tensor of shape with values in [-1, 1), from a fixed pattern. */
static ct_tensor *values(ct_dtype dtype, const int64_t *shape, int ndim, int salt)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = (double)((i * 37 + salt * 11) % 101) / 50.5 - 1.0;
    ct_tensor *d = ct_tensor_from_data(v, CT_F64, shape, ndim, CT_DEVICE_CPU);
    ct_tensor *t = ct_to_dtype(d, dtype);
    ct_release(d);
    free(v);
    return t;
}

/* One operand on the CPU and the same on opencl:0, with the same geometry (views are made on
 * both, so transposes and offsets reach CLBlast as they are, not as contiguous copies). */
typedef struct operand {
    ct_tensor *cpu, *device;
} operand;

static operand make(ct_dtype dtype, const int64_t *shape, int ndim, int salt)
{
    operand o = {values(dtype, shape, ndim, salt), NULL};
    o.device = ct_to(o.cpu, OPENCL0);
    assert_non_null(o.device);
    return o;
}

static operand transposed(operand o, int d0, int d1)
{
    return (operand){ct_transpose(o.cpu, d0, d1), ct_transpose(o.device, d0, d1)};
}

static operand narrowed(operand o, int dim, int64_t start, int64_t length)
{
    return (operand){ct_narrow(o.cpu, dim, start, length), ct_narrow(o.device, dim, start, length)};
}

/* a @ b on opencl:0 against the CPU. */
static void check_matmul(operand a, operand b, const char *what)
{
    ct_tensor *expected = ct_matmul(a.cpu, b.cpu);
    assert_non_null(expected);
    ct_tensor *actual = ct_matmul(a.device, b.device);
    if (!actual) fail_msg("%s: %s", what, ct_last_error_message());
    assert_true(ct_device_equal(ct_tensor_device(actual), OPENCL0));
    double k = (double)ct_tensor_size(a.cpu, -1);
    double tolerance = ct_tensor_dtype(a.cpu) == CT_F32 ? 1e-5 * k : 1e-13 * k;
    assert_same_values(actual, expected, 0, tolerance, what);
}

static void plain_products_match_openblas(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    ct_scope_push();
    for (int f = 0; f < 2; f++) {
        ct_dtype dtype = f ? CT_F64 : CT_F32;
        operand a = make(dtype, (int64_t[]){33, 47}, 2, 1), b = make(dtype, (int64_t[]){47, 29}, 2, 2);
        check_matmul(a, b, "33x47 @ 47x29");
        check_matmul(a, make(dtype, (int64_t[]){47}, 1, 3), "matrix @ vector");
        check_matmul(make(dtype, (int64_t[]){33}, 1, 4), a, "vector @ matrix");
        operand tiny = make(dtype, (int64_t[]){1, 1}, 2, 5);
        check_matmul(tiny, tiny, "1x1 @ 1x1");
    }
    ct_scope_pop();
}

static void transposed_operands_match_openblas(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    ct_scope_push();
    for (int f = 0; f < 2; f++) {
        ct_dtype dtype = f ? CT_F64 : CT_F32;
        operand a = make(dtype, (int64_t[]){40, 24}, 2, 1), b = make(dtype, (int64_t[]){17, 40}, 2, 2);
        operand at = transposed(a, 0, 1), bt = transposed(b, 0, 1); /* 24x40, 40x17 */
        assert_false(ct_is_contiguous(at.device));
        operand square = make(dtype, (int64_t[]){40, 40}, 2, 3);
        check_matmul(at, square, "transposed a");
        check_matmul(square, bt, "transposed b");
        check_matmul(at, bt, "both transposed");
        /* a row block from the middle of the storage (an offset), transposed */
        operand rows_t = transposed(narrowed(square, 0, 5, 30), 0, 1); /* 40x30 */
        check_matmul(rows_t, make(dtype, (int64_t[]){30, 7}, 2, 6), "offset and transposed");
        /* a column block: a leading dimension larger than the row, and an offset */
        operand cols = narrowed(square, 1, 3, 20);
        assert_false(ct_is_contiguous(cols.device));
        check_matmul(cols, make(dtype, (int64_t[]){20, 9}, 2, 7), "leading dim past the row");
    }
    ct_scope_pop();
}

static void batched_products_match_openblas(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    ct_scope_push();
    for (int f = 0; f < 2; f++) {
        ct_dtype dtype = f ? CT_F64 : CT_F32;
        operand a = make(dtype, (int64_t[]){6, 12, 10}, 3, 1), b = make(dtype, (int64_t[]){6, 10, 8}, 3, 2);
        check_matmul(a, b, "batch of 6");
        /* one b for every matrix of a (batch stride 0), and broadcast batch dims */
        check_matmul(a, make(dtype, (int64_t[]){10, 8}, 2, 3), "batch @ one matrix");
        check_matmul(make(dtype, (int64_t[]){2, 1, 5, 7}, 4, 4), make(dtype, (int64_t[]){3, 7, 4}, 3, 5),
                     "broadcast batch dims [2, 1] and [3]");
        /* transposed matrices inside a batch */
        check_matmul(a, transposed(make(dtype, (int64_t[]){6, 8, 10}, 3, 6), 1, 2),
                     "batch with transposed b");
        check_matmul(transposed(make(dtype, (int64_t[]){6, 10, 12}, 3, 7), 1, 2), b,
                     "batch with transposed a");
    }
    ct_scope_pop();
}

static void products_on_the_second_device_and_empty_ones(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(2);
    ct_scope_push();
    ct_tensor *a = values(CT_F32, (int64_t[]){9, 5}, 2, 1), *b = values(CT_F32, (int64_t[]){5, 4}, 2, 2);
    ct_tensor *expected = ct_matmul(a, b);
    ct_tensor *da = ct_to(a, OPENCL1), *db = ct_to(b, OPENCL1);
    ct_tensor *actual = ct_matmul(da, db);
    assert_non_null(actual);
    assert_true(ct_device_equal(ct_tensor_device(actual), OPENCL1));
    assert_same_values(actual, expected, 0, 1e-5 * 5, "on opencl:1");
    /* k = 0: zeros; m = 0: an empty result */
    ct_tensor *e1 = ct_to(values(CT_F32, (int64_t[]){3, 0}, 2, 1), OPENCL1);
    ct_tensor *e2 = ct_to(values(CT_F32, (int64_t[]){0, 4}, 2, 1), OPENCL1);
    ct_tensor *zeros = ct_matmul(e1, e2);
    assert_same_values(zeros, ct_zeros((int64_t[]){3, 4}, 2, CT_F32, CT_DEVICE_CPU), 0, 0, "k = 0");
    ct_tensor *none = ct_matmul(ct_transpose(e1, 0, 1), ct_to(values(CT_F32, (int64_t[]){3, 2}, 2, 1), OPENCL1));
    assert_non_null(none);
    assert_int_equal(ct_numel(none), 0);
    /* operands on two devices */
    assert_null(ct_matmul(ct_to(a, OPENCL0), db));
    assert_error(CT_ERR_DEVICE, "opencl:0");
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_products_match_openblas),
        cmocka_unit_test(transposed_operands_match_openblas),
        cmocka_unit_test(batched_products_match_openblas),
        cmocka_unit_test(products_on_the_second_device_and_empty_ones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
