/* Autocast (torch.autocast): regions per thread and device type; inside one, products run in the
 * region's 16-bit dtype, range-hungry ops in float32, other ops promote; float64, integers and
 * other device types are left alone; the casts are recorded, so gradients come back in each
 * leaf's own dtype and equal those of the same graph with the casts written out by hand. */
#include <math.h>
#include <pthread.h>

#include "test_common.h"

static void regions_nest_per_thread_and_bad_use_is_an_error(void **state)
{
    (void)state;
    ct_clear_error();
    assert_false(ct_autocast_enabled(CT_CPU));
    assert_int_equal(ct_autocast_dtype(CT_CPU), CT_F32);
    assert_int_equal(ct_autocast_push(CT_CPU, CT_BF16), CT_OK);
    assert_true(ct_autocast_enabled(CT_CPU));
    assert_false(ct_autocast_enabled(CT_OPENCL));
    assert_int_equal(ct_autocast_push(CT_OPENCL, CT_F16), CT_OK);
    assert_int_equal(ct_autocast_push(CT_CPU, CT_F32), CT_OK); /* off inside */
    assert_false(ct_autocast_enabled(CT_CPU));
    assert_int_equal(ct_autocast_dtype(CT_OPENCL), CT_F16);
    assert_int_equal(ct_autocast_pop(), CT_OK);
    assert_int_equal(ct_autocast_dtype(CT_CPU), CT_BF16);
    assert_int_equal(ct_autocast_pop(), CT_OK);
    assert_int_equal(ct_autocast_pop(), CT_OK);
    assert_int_equal(ct_autocast_pop(), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_autocast_pop: no autocast region is open");
    assert_int_equal(ct_autocast_push(CT_CPU, CT_F64), CT_ERR_DTYPE);
    assert_error(CT_ERR_DTYPE, "autocast runs in float16 or bfloat16 (or float32 to turn it off), not in float64");
    assert_int_equal(ct_autocast_push((ct_device_type)7, CT_F16), CT_ERR_DEVICE);
    assert_error(CT_ERR_DEVICE, "device type 7 is not a ct_device_type");
    for (int k = 0; k < 64; k++) assert_int_equal(ct_autocast_push(CT_CPU, CT_F16), CT_OK);
    assert_int_equal(ct_autocast_push(CT_CPU, CT_F16), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "64 regions are open on this thread");
    for (int k = 0; k < 64; k++) assert_int_equal(ct_autocast_pop(), CT_OK);
    assert_false(ct_autocast_enabled(CT_CPU));
}

static void *enabled_elsewhere(void *arg)
{
    *(bool *)arg = ct_autocast_enabled(CT_CPU);
    return NULL;
}

static void another_thread_has_its_own_regions(void **state)
{
    (void)state;
    assert_int_equal(ct_autocast_push(CT_CPU, CT_BF16), CT_OK);
    bool seen = true;
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, enabled_elsewhere, &seen), 0);
    pthread_join(thread, NULL);
    assert_false(seen);
    assert_int_equal(ct_autocast_pop(), CT_OK);
}

static ct_tensor *random_matrix(int64_t rows, int64_t cols, ct_dtype dtype)
{
    int64_t shape[2] = {rows, cols};
    ct_tensor *t = ct_randn(shape, 2, dtype, CT_DEVICE_CPU);
    assert_non_null(t);
    return t;
}

static void ops_take_the_dtype_of_their_list(void **state)
{
    (void)state;
    ct_manual_seed(3);
    ct_scope_push();
    ct_tensor *a = random_matrix(4, 8, CT_F32), *b = random_matrix(8, 3, CT_F32);
    ct_tensor *a64 = random_matrix(4, 8, CT_F64), *b64 = random_matrix(8, 3, CT_F64);
    for (int format = 0; format < 2; format++) {
        ct_dtype low = format ? CT_F16 : CT_BF16;
        assert_int_equal(ct_autocast_push(CT_CPU, low), CT_OK);
        ct_tensor *product = ct_matmul(a, b);
        if (!product) fail_msg("%s", ct_last_error_message());
        assert_int_equal(ct_tensor_dtype(product), low);                       /* lower list */
        assert_int_equal(ct_tensor_dtype(ct_softmax(product, 1)), CT_F32);      /* float32 list */
        assert_int_equal(ct_tensor_dtype(ct_sum(product, NULL, 0, false)), CT_F32);
        assert_int_equal(ct_tensor_dtype(ct_relu(product)), low);               /* as it comes */
        ct_tensor *bias = ct_zeros((int64_t[]){3}, 1, CT_F32, CT_DEVICE_CPU);
        assert_int_equal(ct_tensor_dtype(ct_add(product, bias)), CT_F32);       /* promotes */
        assert_int_equal(ct_tensor_dtype(ct_matmul(a64, b64)), CT_F64);         /* never cast */
        assert_int_equal(ct_autocast_push(CT_CPU, CT_F32), CT_OK);
        assert_int_equal(ct_tensor_dtype(ct_matmul(a, b)), CT_F32);             /* turned off */
        assert_int_equal(ct_autocast_pop(), CT_OK);
        assert_int_equal(ct_autocast_pop(), CT_OK);
        /* the product is float32's, rounded to the 16-bit format's precision */
        float got[12], exact[12];
        ct_tensor *wide = ct_to_dtype(product, CT_F32);
        assert_int_equal(ct_tensor_to_array(wide, got, sizeof got), CT_OK);
        assert_int_equal(ct_tensor_to_array(ct_matmul(a, b), exact, sizeof exact), CT_OK);
        double eps = format ? 0x1p-10 : 0x1p-7;
        for (int k = 0; k < 12; k++) assert_true(fabs(got[k] - exact[k]) <= 16 * eps * fmax(1.0, fabs(exact[k])));
    }
    assert_int_equal(ct_scope_pop(), CT_OK);
}

/* loss = sum(log_softmax(x @ w) * c): under autocast, and written out by hand with the casts
 * autocast makes; the float32 leaves' gradients are float32 and bit for bit the same. */
static void gradients_reach_float32_leaves_through_the_casts(void **state)
{
    (void)state;
    ct_manual_seed(11);
    ct_scope_push();
    ct_tensor *x = random_matrix(5, 6, CT_F32), *w = random_matrix(6, 4, CT_F32), *c = random_matrix(5, 4, CT_F32);
    ct_requires_grad_(w, true);
    ct_requires_grad_(x, true);
    for (int format = 0; format < 2; format++) {
        ct_dtype low = format ? CT_F16 : CT_BF16;
        assert_int_equal(ct_autocast_push(CT_CPU, low), CT_OK);
        ct_tensor *loss = ct_sum(ct_mul(ct_log_softmax(ct_matmul(x, w), 1), c), NULL, 0, false);
        assert_int_equal(ct_autocast_pop(), CT_OK);
        assert_non_null(loss);
        assert_int_equal(ct_backward(loss), CT_OK);
        ct_tensor *gw = ct_grad(w), *gx = ct_grad(x);
        assert_int_equal(ct_tensor_dtype(gw), CT_F32);
        assert_int_equal(ct_tensor_dtype(gx), CT_F32);
        float auto_w[24], auto_x[30], hand_w[24], hand_x[30];
        assert_int_equal(ct_tensor_to_array(gw, auto_w, sizeof auto_w), CT_OK);
        assert_int_equal(ct_tensor_to_array(gx, auto_x, sizeof auto_x), CT_OK);
        ct_release(gw), ct_release(gx);
        ct_zero_grad(w), ct_zero_grad(x);

        ct_tensor *product = ct_matmul(ct_to_dtype(x, low), ct_to_dtype(w, low));
        ct_tensor *by_hand = ct_sum(ct_mul(ct_log_softmax(ct_to_dtype(product, CT_F32), 1), c), NULL, 0, false);
        assert_int_equal(ct_backward(by_hand), CT_OK);
        gw = ct_grad(w), gx = ct_grad(x);
        assert_int_equal(ct_tensor_to_array(gw, hand_w, sizeof hand_w), CT_OK);
        assert_int_equal(ct_tensor_to_array(gx, hand_x, sizeof hand_x), CT_OK);
        assert_memory_equal(auto_w, hand_w, sizeof auto_w);
        assert_memory_equal(auto_x, hand_x, sizeof auto_x);
        ct_release(gw), ct_release(gx);
        ct_zero_grad(w), ct_zero_grad(x);
    }
    assert_int_equal(ct_scope_pop(), CT_OK);
}

/* A backward inside the region (the loss scaled and backpropagated before the pop, as many
 * training loops do) gives the gradients of one outside it: the bias of a bfloat16 Linear got a
 * float32 gradient from the autocast sum and the engine refused it. */
static void a_backward_inside_the_region_runs_without_autocast(void **state)
{
    (void)state;
    ct_manual_seed(12);
    ct_scope_push();
    ct_module *linear = ct_linear(6, 4, true);
    assert_int_equal(ct_module_to_dtype(linear, CT_BF16), CT_OK);
    ct_tensor *x = ct_to_dtype(random_matrix(5, 6, CT_F32), CT_BF16);
    float grads[2][4];
    for (int inside = 0; inside < 2; inside++) {
        assert_int_equal(ct_autocast_push(CT_CPU, CT_BF16), CT_OK);
        ct_tensor *loss = ct_sum(ct_module_forward(linear, x), NULL, 0, false);
        assert_non_null(loss);
        if (!inside) assert_int_equal(ct_autocast_pop(), CT_OK);
        if (ct_backward(loss) != CT_OK) fail_msg("backward: %s", ct_last_error_message());
        assert_true(ct_autocast_enabled(CT_CPU) == (bool)inside); /* the region is the caller's again */
        if (inside) assert_int_equal(ct_autocast_pop(), CT_OK);
        ct_tensor *bias = ct_module_parameter(linear, "bias");
        ct_tensor *g = ct_grad(bias);
        assert_int_equal(ct_tensor_dtype(g), CT_BF16);
        ct_tensor *g32 = ct_to_dtype(g, CT_F32);
        assert_int_equal(ct_tensor_to_array(g32, grads[inside], sizeof grads[inside]), CT_OK);
        ct_zero_grad(bias);
        ct_release(g), ct_release(g32), ct_release(bias);
    }
    assert_memory_equal(grads[0], grads[1], sizeof grads[0]);
    ct_module_release(linear);
    assert_int_equal(ct_scope_pop(), CT_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(regions_nest_per_thread_and_bad_use_is_an_error),
        cmocka_unit_test(another_thread_has_its_own_regions),
        cmocka_unit_test(ops_take_the_dtype_of_their_list),
        cmocka_unit_test(gradients_reach_float32_leaves_through_the_casts),
        cmocka_unit_test(a_backward_inside_the_region_runs_without_autocast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
