/* Copies carry the graph: ct_to between devices (cpu, opencl:0, opencl:1, blocking or queued),
 * ct_to_dtype, ct_to_with, ct_clone and ct_contiguous pass the gradient back moved to the input's
 * device and cast to its dtype; a ct_to that changes nothing returns the input and records
 * nothing. */
#include <math.h>

#include "support/gradcheck.h"
#include "test_common.h"

#define OPENCL(i) ((ct_device){CT_OPENCL, (i)})

static ct_tensor *values_on(ct_device device, ct_dtype dtype, const double *values, int64_t n)
{
    ct_tensor *t = ct_tensor_from_data(values, CT_F64, &n, 1, CT_DEVICE_CPU);
    ct_tensor *typed = ct_to_dtype(t, dtype);
    ct_tensor *out = ct_to(typed, device);
    ct_release(typed);
    ct_release(t);
    return out;
}

/* The leaf's gradient: checks its device and dtype and reads it into host doubles. */
static void read_grad(const ct_tensor *leaf, ct_device device, ct_dtype dtype, double *values, int64_t n)
{
    ct_tensor *g = ct_grad(leaf);
    assert_non_null(g);
    assert_true(ct_device_equal(ct_tensor_device(g), device));
    assert_int_equal(ct_tensor_dtype(g), dtype);
    ct_tensor *host = ct_to_dtype(g, CT_F64);
    assert_int_equal(ct_tensor_to_array(host, values, sizeof(double) * (size_t)n), CT_OK);
    ct_release(host);
    ct_release(g);
}

static const double x_values[4] = {0.5, -1.25, 2.0, 3.5};
static const double w_values[4] = {1.0, -2.0, 0.5, 4.0};

/* L = sum(move(x) * w) for a leaf x on `from` in from_dtype, w on `to` in to_dtype: the gradient
 * of x is w, on `from` and in from_dtype. */
static void check_move(ct_device from, ct_dtype from_dtype, ct_device to, ct_dtype to_dtype)
{
    ct_scope_push();
    ct_tensor *x = values_on(from, from_dtype, x_values, 4);
    ct_tensor *w = values_on(to, to_dtype, w_values, 4);
    assert_int_equal(ct_requires_grad_(x, true), CT_OK);
    ct_to_options options = ct_to_options_default(to);
    options.dtype = (int)to_dtype;
    ct_tensor *moved = ct_to_with(x, &options);
    assert_non_null(moved);
    assert_string_equal(ct_grad_fn_name(moved), "ToCopyBackward");
    assert_int_equal(ct_backward(ct_sum(ct_mul(moved, w), NULL, 0, false)), CT_OK);
    double g[4];
    read_grad(x, from, from_dtype, g, 4);
    for (int i = 0; i < 4; i++) assert_true(g[i] == w_values[i]);
    ct_scope_pop();
}

static void dtype_casts_give_the_leaf_its_own_dtype(void **state)
{
    (void)state;
    check_move(CT_DEVICE_CPU, CT_F64, CT_DEVICE_CPU, CT_F32);
    check_move(CT_DEVICE_CPU, CT_F32, CT_DEVICE_CPU, CT_F64);
    /* ct_to_dtype itself */
    ct_scope_push();
    ct_tensor *x = values_on(CT_DEVICE_CPU, CT_F64, x_values, 4);
    ct_requires_grad_(x, true);
    ct_tensor *y = ct_to_dtype(x, CT_F32);
    assert_string_equal(ct_grad_fn_name(y), "ToCopyBackward");
    assert_int_equal(ct_backward(ct_sum(ct_mul(y, y), NULL, 0, false)), CT_OK);
    double g[4];
    read_grad(x, CT_DEVICE_CPU, CT_F64, g, 4);
    for (int i = 0; i < 4; i++) assert_true(g[i] == 2 * x_values[i]);
    ct_scope_pop();
}

static void casts_to_integers_record_nothing(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *x = values_on(CT_DEVICE_CPU, CT_F64, x_values, 4);
    ct_requires_grad_(x, true);
    ct_tensor *rounded = ct_to_dtype(x, CT_I64), *flags = ct_to_dtype(x, CT_BOOL);
    assert_false(ct_requires_grad(rounded));
    assert_false(ct_requires_grad(flags));
    assert_null(ct_grad_fn_name(rounded));
    ct_scope_pop();
}

static void a_to_that_changes_nothing_is_the_input(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *x = values_on(CT_DEVICE_CPU, CT_F64, x_values, 4);
    ct_requires_grad_(x, true);
    ct_tensor *same[3] = {ct_to(x, CT_DEVICE_CPU), ct_to_dtype(x, CT_F64), ct_contiguous(x)};
    for (int i = 0; i < 3; i++) {
        assert_ptr_equal(same[i], x);
        assert_true(ct_is_leaf(same[i]));
        assert_null(ct_grad_fn_name(same[i]));
    }
    ct_scope_pop();
}

static void no_grad_mode_records_no_copy(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *x = values_on(CT_DEVICE_CPU, CT_F64, x_values, 4);
    ct_requires_grad_(x, true);
    ct_no_grad_push();
    ct_tensor *copies[3] = {ct_to_dtype(x, CT_F32), ct_clone(x),
                            ct_to_with(x, &(ct_to_options){CT_DEVICE_CPU, -1, false, true})};
    ct_no_grad_pop();
    for (int i = 0; i < 3; i++) assert_false(ct_requires_grad(copies[i]));
    ct_scope_pop();
}

static ct_tensor *f_clone(ct_tensor *const *x, void *c) { (void)c; return ct_clone(x[0]); }
static ct_tensor *f_contiguous(ct_tensor *const *x, void *c) { (void)c; return ct_contiguous(x[0]); }
static ct_tensor *f_forced_copy(ct_tensor *const *x, void *c)
{
    (void)c;
    ct_to_options options = ct_to_options_default(ct_tensor_device(x[0]));
    options.copy = true;
    return ct_to_with(x[0], &options);
}

/* x * y computed on `c`'s device (x and y live elsewhere). */
static ct_tensor *f_product_on(ct_tensor *const *x, void *c)
{
    ct_device device = *(const ct_device *)c;
    ct_tensor *a = ct_to(x[0], device), *b = ct_to(x[1], device);
    ct_tensor *out = ct_mul(a, b);
    ct_release(a);
    ct_release(b);
    return out;
}

/* cpu -> opencl:0 (square) -> opencl:1 (add the other input, moved there) -> cpu. */
static ct_tensor *f_round_trip(ct_tensor *const *x, void *c)
{
    (void)c;
    ct_tensor *on0 = ct_to(x[0], OPENCL(0));
    ct_tensor *squared = ct_mul(on0, on0);
    ct_tensor *on1 = ct_to(squared, OPENCL(1));
    ct_tensor *other = ct_to(x[1], OPENCL(1));
    ct_tensor *total = ct_add(on1, other);
    ct_tensor *back = ct_to(total, CT_DEVICE_CPU);
    ct_release(total);
    ct_release(other);
    ct_release(on1);
    ct_release(squared);
    ct_release(on0);
    return back;
}

static ct_tensor *random_input(ct_device device, const int64_t *shape, int ndim)
{
    ct_tensor *r = ct_randn(shape, ndim, CT_F64, CT_DEVICE_CPU);
    ct_tensor *out = ct_to(r, device);
    ct_release(r);
    return out;
}

static void check_copies_on(ct_device device)
{
    ct_scope_push();
    ct_manual_seed(3);
    int64_t s34[2] = {3, 4};
    ct_tensor *t = random_input(device, s34, 2);
    ct_tensor *transposed = ct_transpose(t, 0, 1);
    ct_gradcheck("clone", f_clone, &t, NULL, 1, NULL);
    ct_gradcheck("clone of a transposed view", f_clone, &transposed, NULL, 1, NULL);
    ct_gradcheck("contiguous of a transposed view", f_contiguous, &transposed, NULL, 1, NULL);
    ct_gradcheck("ct_to_with copy", f_forced_copy, &transposed, NULL, 1, NULL);
    ct_requires_grad_(t, true);
    ct_requires_grad_(transposed, true);
    ct_tensor *copies[3] = {ct_clone(t), ct_contiguous(transposed), f_forced_copy(&t, NULL)};
    assert_string_equal(ct_grad_fn_name(copies[0]), "CloneBackward");
    assert_string_equal(ct_grad_fn_name(copies[1]), "CloneBackward");
    assert_string_equal(ct_grad_fn_name(copies[2]), "ToCopyBackward");
    ct_scope_pop();
}

static void clones_and_copies_pass_the_gradient_on_the_cpu(void **state)
{
    (void)state;
    check_copies_on(CT_DEVICE_CPU);
}

static void clones_and_copies_pass_the_gradient_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) check_copies_on(OPENCL(i));
}

static void moves_give_the_leaf_its_own_device(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    int count = ct_device_count(CT_OPENCL);
    check_move(CT_DEVICE_CPU, CT_F64, OPENCL(0), CT_F64);
    check_move(OPENCL(0), CT_F64, CT_DEVICE_CPU, CT_F64);
    check_move(CT_DEVICE_CPU, CT_F64, OPENCL(0), CT_F32); /* device and dtype at once */
    check_move(OPENCL(0), CT_F32, CT_DEVICE_CPU, CT_F64);
    if (count < 2) return;
    check_move(OPENCL(0), CT_F64, OPENCL(1), CT_F64);
    check_move(OPENCL(1), CT_F32, OPENCL(0), CT_F64);
}

static void gradients_through_moves_match_finite_differences(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    ct_scope_push();
    ct_manual_seed(9);
    int64_t s23[2] = {2, 3}, s3[1] = {3};
    ct_tensor *a = random_input(CT_DEVICE_CPU, s23, 2), *b = random_input(CT_DEVICE_CPU, s3, 1);
    ct_tensor *ab[2] = {a, b};
    ct_device target = OPENCL(0);
    ct_gradcheck("cpu inputs multiplied on opencl:0", f_product_on, ab, NULL, 2, &target);
    ct_tensor *c = random_input(OPENCL(0), s23, 2), *d = random_input(OPENCL(0), s3, 1);
    ct_tensor *cd[2] = {c, d};
    target = CT_DEVICE_CPU;
    ct_gradcheck("opencl:0 inputs multiplied on the cpu", f_product_on, cd, NULL, 2, &target);
    if (ct_device_count(CT_OPENCL) >= 2) {
        ct_gradcheck("cpu -> opencl:0 -> opencl:1 -> cpu", f_round_trip, ab, NULL, 2, NULL);
        ct_tensor *e = random_input(OPENCL(1), s23, 2);
        ct_tensor *cross[2] = {c, e};
        target = OPENCL(1);
        ct_gradcheck("opencl:0 and opencl:1 inputs multiplied on opencl:1", f_product_on, cross, NULL, 2, &target);
        for (int i = 0; i < 2; i++) ct_requires_grad_(cross[i], true);
        ct_tensor *loss = ct_sum(f_product_on(cross, &target), NULL, 0, false);
        assert_int_equal(ct_backward(loss), CT_OK);
        ct_tensor *gc = ct_grad(c), *ge = ct_grad(e);
        assert_true(ct_device_equal(ct_tensor_device(gc), OPENCL(0)));
        assert_true(ct_device_equal(ct_tensor_device(ge), OPENCL(1)));
        ct_release(gc);
        ct_release(ge);
    }
    ct_scope_pop();
}

/* A leaf used on two devices: the two paths' gradients meet on the leaf's device. */
static void paths_on_two_devices_accumulate_on_the_leaf(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    ct_scope_push();
    ct_tensor *x = values_on(CT_DEVICE_CPU, CT_F64, x_values, 4);
    ct_requires_grad_(x, true);
    ct_tensor *on_device = ct_to(x, OPENCL(0));
    ct_tensor *cubed_there = ct_mul(ct_mul(on_device, on_device), on_device);
    ct_tensor *loss = ct_add(ct_sum(ct_to(cubed_there, CT_DEVICE_CPU), NULL, 0, false),
                             ct_sum(ct_mul(x, x), NULL, 0, false));
    assert_int_equal(ct_backward(loss), CT_OK);
    double g[4];
    read_grad(x, CT_DEVICE_CPU, CT_F64, g, 4);
    for (int i = 0; i < 4; i++)
        assert_true(fabs(g[i] - (3 * x_values[i] * x_values[i] + 2 * x_values[i])) < 1e-12);
    ct_scope_pop();
}

/* Queued copies (pinned host memory to a device and back) record like blocking ones. */
static void queued_moves_carry_the_graph(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    ct_scope_push();
    ct_tensor *x = ct_pin_memory(values_on(CT_DEVICE_CPU, CT_F64, x_values, 4));
    ct_tensor *w = values_on(CT_DEVICE_CPU, CT_F64, w_values, 4);
    assert_true(ct_is_pinned(x));
    ct_requires_grad_(x, true);
    ct_to_options there = ct_to_options_default(OPENCL(0)), back = ct_to_options_default(CT_DEVICE_CPU);
    there.non_blocking = back.non_blocking = true;
    ct_tensor *on_device = ct_to_with(x, &there);
    ct_tensor *doubled = ct_add(on_device, on_device);
    ct_tensor *home = ct_to_with(doubled, &back);
    assert_string_equal(ct_grad_fn_name(home), "ToCopyBackward");
    assert_int_equal(ct_backward(ct_sum(ct_mul(home, w), NULL, 0, false)), CT_OK);
    double g[4];
    read_grad(x, CT_DEVICE_CPU, CT_F64, g, 4);
    for (int i = 0; i < 4; i++) assert_true(g[i] == 2 * w_values[i]);
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dtype_casts_give_the_leaf_its_own_dtype),
        cmocka_unit_test(casts_to_integers_record_nothing),
        cmocka_unit_test(a_to_that_changes_nothing_is_the_input),
        cmocka_unit_test(no_grad_mode_records_no_copy),
        cmocka_unit_test(clones_and_copies_pass_the_gradient_on_the_cpu),
        cmocka_unit_test(clones_and_copies_pass_the_gradient_on_opencl),
        cmocka_unit_test(moves_give_the_leaf_its_own_device),
        cmocka_unit_test(gradients_through_moves_match_finite_differences),
        cmocka_unit_test(paths_on_two_devices_accumulate_on_the_leaf),
        cmocka_unit_test(queued_moves_carry_the_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
