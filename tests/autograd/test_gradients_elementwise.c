/* Gradients of pow, maximum, minimum, where and the tensor-scalar ops: finite-difference checks
 * (with broadcasting and views) on the CPU and every OpenCL device, and exact checks of the
 * places finite differences cannot judge (ties, pow's zero cases) and of mixed dtypes. */
#include <math.h>

#include "support/gradcheck.h"
#include "test_common.h"

static ct_tensor *f_pow(ct_tensor *const *x, void *c) { (void)c; return ct_pow(x[0], x[1]); }
static ct_tensor *f_maximum(ct_tensor *const *x, void *c) { (void)c; return ct_maximum(x[0], x[1]); }
static ct_tensor *f_minimum(ct_tensor *const *x, void *c) { (void)c; return ct_minimum(x[0], x[1]); }
static ct_tensor *f_where(ct_tensor *const *x, void *c) { (void)c; return ct_where(x[0], x[1], x[2]); }
static ct_tensor *f_add_scalar(ct_tensor *const *x, void *c) { return ct_add_scalar(x[0], *(double *)c); }
static ct_tensor *f_sub_scalar(ct_tensor *const *x, void *c) { return ct_sub_scalar(x[0], *(double *)c); }
static ct_tensor *f_mul_scalar(ct_tensor *const *x, void *c) { return ct_mul_scalar(x[0], *(double *)c); }
static ct_tensor *f_div_scalar(ct_tensor *const *x, void *c) { return ct_div_scalar(x[0], *(double *)c); }
static ct_tensor *f_pow_scalar(ct_tensor *const *x, void *c) { return ct_pow_scalar(x[0], *(double *)c); }

/* A float64 tensor on device with values uniform in [low, high). */
static ct_tensor *uniform(ct_device device, const int64_t *shape, int ndim, double low, double high)
{
    ct_tensor *r = ct_rand(shape, ndim, CT_F64, CT_DEVICE_CPU);
    return ct_to(ct_add_scalar(ct_mul_scalar(r, high - low), low), device);
}

static void check_binary_ops_on(ct_device device)
{
    ct_scope_push();
    ct_manual_seed(11);
    int64_t s23[2] = {2, 3}, s3[1] = {3}, s41[2] = {4, 1}, s15[2] = {1, 5}, s32[2] = {3, 2};
    /* positive bases: a negative base with a non-integer exponent has no real power */
    ct_tensor *base = uniform(device, s23, 2, 0.5, 2.0), *exponent = uniform(device, s3, 1, -1.5, 2.5);
    ct_tensor *pow_args[2] = {base, exponent};
    ct_gradcheck("pow [2,3]^[3]", f_pow, pow_args, NULL, 2, NULL);
    ct_tensor *column = uniform(device, s41, 2, 0.5, 2.0), *row = uniform(device, s15, 2, -1.0, 2.0);
    ct_tensor *pow_outer[2] = {column, row};
    ct_gradcheck("pow [4,1]^[1,5]", f_pow, pow_outer, NULL, 2, NULL);
    ct_tensor *transposed = ct_transpose(uniform(device, s32, 2, 0.5, 2.0), 0, 1);
    ct_tensor *pow_view[2] = {transposed, exponent};
    ct_gradcheck("pow of a transposed view", f_pow, pow_view, NULL, 2, NULL);
    int64_t exponents[3] = {0, 1, 3};
    ct_tensor *integer_exponent = ct_tensor_from_data(exponents, CT_I64, s3, 1, device);
    ct_tensor *pow_int[2] = {base, integer_exponent};
    ct_gradcheck("pow with an int64 exponent", f_pow, pow_int, (bool[]){false, true}, 2, NULL);

    /* distinct random values: no ties within the finite-difference step */
    ct_tensor *p = uniform(device, s23, 2, -1.0, 1.0), *q = uniform(device, s3, 1, -1.0, 1.0);
    ct_tensor *pq[2] = {p, q}, *outer[2] = {uniform(device, s41, 2, -1.0, 1.0), uniform(device, s15, 2, -1.0, 1.0)};
    ct_tensor *view_and_row[2] = {ct_transpose(uniform(device, s32, 2, -1.0, 1.0), 0, 1), q};
    ct_gradcheck("maximum [2,3],[3]", f_maximum, pq, NULL, 2, NULL);
    ct_gradcheck("maximum [4,1],[1,5]", f_maximum, outer, NULL, 2, NULL);
    ct_gradcheck("maximum of a transposed view", f_maximum, view_and_row, NULL, 2, NULL);
    ct_gradcheck("minimum [2,3],[3]", f_minimum, pq, NULL, 2, NULL);
    ct_gradcheck("minimum [4,1],[1,5]", f_minimum, outer, NULL, 2, NULL);
    ct_gradcheck("minimum of a transposed view", f_minimum, view_and_row, NULL, 2, NULL);

    /* cond [2,1] broadcast against a [2,3] (a view) and b [3] */
    int64_t s21[2] = {2, 1};
    bool flags[2] = {true, false};
    ct_tensor *cond = ct_tensor_from_data(flags, CT_BOOL, s21, 2, device);
    ct_tensor *where_args[3] = {cond, ct_transpose(uniform(device, s32, 2, -1.0, 1.0), 0, 1), q};
    ct_gradcheck("where [2,1] ? [2,3] : [3]", f_where, where_args, (bool[]){true, false, false}, 3, NULL);
    ct_tensor *elementwise_cond = ct_gt(p, ct_zeros(s3, 1, CT_F64, device));
    ct_tensor *where_same[3] = {elementwise_cond, uniform(device, s23, 2, -1.0, 1.0), q};
    ct_gradcheck("where [2,3] ? [2,3] : [3]", f_where, where_same, (bool[]){true, false, false}, 3, NULL);
    ct_scope_pop();
}

static void check_scalar_ops_on(ct_device device)
{
    ct_scope_push();
    ct_manual_seed(12);
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    ct_tensor *x = uniform(device, s23, 2, 0.5, 2.0);
    ct_tensor *view = ct_transpose(uniform(device, s32, 2, 0.5, 2.0), 0, 1);
    double s = 2.5, negative = -1.5, zero = 0.0, three = 3.0;
    ct_gradcheck("add_scalar", f_add_scalar, &x, NULL, 1, &s);
    ct_gradcheck("sub_scalar", f_sub_scalar, &view, NULL, 1, &s);
    ct_gradcheck("mul_scalar", f_mul_scalar, &view, NULL, 1, &negative);
    ct_gradcheck("div_scalar", f_div_scalar, &x, NULL, 1, &negative);
    ct_gradcheck("pow_scalar 2.5", f_pow_scalar, &x, NULL, 1, &s);
    ct_gradcheck("pow_scalar -1.5 of a view", f_pow_scalar, &view, NULL, 1, &negative);
    ct_gradcheck("pow_scalar 0", f_pow_scalar, &x, NULL, 1, &zero);
    ct_tensor *signed_x = uniform(device, s23, 2, -2.0, 2.0);
    ct_gradcheck("pow_scalar 3 of negative bases", f_pow_scalar, &signed_x, NULL, 1, &three);
    ct_scope_pop();
}

static void gradients_on_the_cpu(void **state)
{
    (void)state;
    check_binary_ops_on(CT_DEVICE_CPU);
    check_scalar_ops_on(CT_DEVICE_CPU);
}

static void gradients_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) {
        check_binary_ops_on((ct_device){CT_OPENCL, i});
        check_scalar_ops_on((ct_device){CT_OPENCL, i});
    }
}

/* ---- exact checks ---- */

static ct_tensor *leaf(const double *values, int64_t n, ct_dtype dtype)
{
    ct_tensor *t = ct_to_dtype(ct_tensor_from_data(values, CT_F64, &n, 1, CT_DEVICE_CPU), dtype);
    ct_requires_grad_(t, true);
    return t;
}

/* t's gradient has this dtype and these values (within tolerance). */
static void assert_grad(const ct_tensor *t, ct_dtype dtype, const double *expected, int64_t n, double tolerance)
{
    ct_tensor *grad = ct_grad(t);
    assert_non_null(grad);
    assert_int_equal(ct_tensor_dtype(grad), dtype);
    assert_int_equal(ct_numel(grad), n);
    double values[8];
    assert_int_equal(ct_tensor_to_array(ct_to_dtype(grad, CT_F64), values, sizeof(double) * (size_t)n), CT_OK);
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(values[i] - expected[i]) <= tolerance))
            fail_msg("grad element %lld is %.10g, expected %.10g", (long long)i, values[i], expected[i]);
    ct_release(grad);
}

static void backward_of_sum(ct_tensor *out)
{
    assert_non_null(out);
    assert_int_equal(ct_backward(ct_sum(out, NULL, 0, false)), CT_OK);
}

static void maximum_and_minimum_split_ties_half_and_half(void **state)
{
    (void)state;
    ct_scope_push();
    const double av[3] = {1, 2, 3}, bv[3] = {1, 5, 0};
    ct_tensor *a = leaf(av, 3, CT_F64), *b = leaf(bv, 3, CT_F64);
    backward_of_sum(ct_maximum(a, b));
    assert_grad(a, CT_F64, (double[]){0.5, 0, 1}, 3, 0);
    assert_grad(b, CT_F64, (double[]){0.5, 1, 0}, 3, 0);
    ct_zero_grad(a);
    ct_zero_grad(b);
    backward_of_sum(ct_minimum(a, b));
    assert_grad(a, CT_F64, (double[]){0.5, 1, 0}, 3, 0);
    assert_grad(b, CT_F64, (double[]){0.5, 0, 1}, 3, 0);
    /* a one-element b broadcast over a: its share of every place is summed */
    const double one = 2;
    ct_tensor *c = leaf(&one, 1, CT_F64);
    ct_zero_grad(a);
    backward_of_sum(ct_maximum(a, c));
    assert_grad(a, CT_F64, (double[]){0, 0.5, 1}, 3, 0);
    assert_grad(c, CT_F64, (double[]){1.5}, 1, 0);
    ct_scope_pop();
}

/* PyTorch's conventions: d/da a^0 = 0 even at a = 0, d/db 0^b = 0 for b >= 0. */
static void pow_gradients_at_zero_base_and_exponent(void **state)
{
    (void)state;
    ct_scope_push();
    const double av[3] = {0, 0, 2}, bv[3] = {0, 2, 0};
    ct_tensor *a = leaf(av, 3, CT_F64), *b = leaf(bv, 3, CT_F64);
    backward_of_sum(ct_pow(a, b));
    assert_grad(a, CT_F64, (double[]){0, 0, 0}, 3, 0);
    assert_grad(b, CT_F64, (double[]){0, 0, log(2.0)}, 3, 1e-15);
    ct_zero_grad(a);
    backward_of_sum(ct_pow_scalar(a, 0.0));
    assert_grad(a, CT_F64, (double[]){0, 0, 0}, 3, 0);
    ct_zero_grad(a);
    backward_of_sum(ct_pow_scalar(a, 2.0));
    assert_grad(a, CT_F64, (double[]){0, 0, 4}, 3, 0);
    ct_scope_pop();
}

/* A float32 input meeting a float64 one: the result is float64, each input's grad has the
 * input's own dtype. */
static void mixed_dtypes_give_each_input_a_grad_of_its_dtype(void **state)
{
    (void)state;
    ct_scope_push();
    const double av[3] = {0.5, 1.5, 2.0}, bv[3] = {2.0, 0.5, -1.0};
    ct_tensor *a = leaf(av, 3, CT_F32), *b = leaf(bv, 3, CT_F64);

    ct_tensor *power = ct_pow(a, b);
    assert_int_equal(ct_tensor_dtype(power), CT_F64);
    backward_of_sum(power);
    double da[3], db[3];
    for (int i = 0; i < 3; i++) {
        da[i] = bv[i] * pow(av[i], bv[i] - 1);
        db[i] = pow(av[i], bv[i]) * log(av[i]);
    }
    assert_grad(a, CT_F32, da, 3, 1e-6);
    assert_grad(b, CT_F64, db, 3, 1e-12);

    ct_zero_grad(a);
    ct_zero_grad(b);
    backward_of_sum(ct_maximum(a, b));
    assert_grad(a, CT_F32, (double[]){0, 1, 1}, 3, 0);
    assert_grad(b, CT_F64, (double[]){1, 0, 0}, 3, 0);

    ct_zero_grad(a);
    ct_zero_grad(b);
    bool flags[3] = {true, false, true};
    int64_t n = 3;
    ct_tensor *cond = ct_tensor_from_data(flags, CT_BOOL, &n, 1, CT_DEVICE_CPU);
    backward_of_sum(ct_mul(ct_where(cond, a, b), ct_where(cond, a, b)));
    assert_grad(a, CT_F32, (double[]){2 * av[0], 0, 2 * av[2]}, 3, 1e-6);
    assert_grad(b, CT_F64, (double[]){0, 2 * bv[1], 0}, 3, 1e-12);
    ct_scope_pop();
}

static void nodes_are_named_and_comparisons_record_none(void **state)
{
    (void)state;
    ct_scope_push();
    const double v[2] = {1.0, 2.0};
    ct_tensor *a = leaf(v, 2, CT_F64), *b = leaf(v, 2, CT_F64);
    assert_string_equal(ct_grad_fn_name(ct_pow(a, b)), "PowBackward");
    assert_string_equal(ct_grad_fn_name(ct_maximum(a, b)), "MaximumBackward");
    assert_string_equal(ct_grad_fn_name(ct_minimum(a, b)), "MinimumBackward");
    assert_string_equal(ct_grad_fn_name(ct_where(ct_gt(a, b), a, b)), "WhereBackward");
    assert_string_equal(ct_grad_fn_name(ct_add_scalar(a, 1)), "AddBackward");
    assert_string_equal(ct_grad_fn_name(ct_sub_scalar(a, 1)), "SubBackward");
    assert_string_equal(ct_grad_fn_name(ct_mul_scalar(a, 2)), "MulBackward");
    assert_string_equal(ct_grad_fn_name(ct_div_scalar(a, 2)), "DivBackward");
    assert_string_equal(ct_grad_fn_name(ct_pow_scalar(a, 2)), "PowBackward");
    assert_false(ct_requires_grad(ct_gt_scalar(a, 1)));
    assert_false(ct_requires_grad(ct_eq(a, b)));
    assert_null(ct_grad_fn_name(ct_le_scalar(a, 1)));
    /* nothing is recorded without grad mode */
    ct_no_grad_push();
    assert_false(ct_requires_grad(ct_pow_scalar(a, 2)));
    assert_false(ct_requires_grad(ct_where(ct_gt(a, b), a, b)));
    ct_no_grad_pop();
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_on_the_cpu),
        cmocka_unit_test(gradients_on_opencl),
        cmocka_unit_test(maximum_and_minimum_split_ties_half_and_half),
        cmocka_unit_test(pow_gradients_at_zero_base_and_exponent),
        cmocka_unit_test(mixed_dtypes_give_each_input_a_grad_of_its_dtype),
        cmocka_unit_test(nodes_are_named_and_comparisons_record_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
