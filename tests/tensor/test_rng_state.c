/* ct_get_rng_state / ct_set_rng_state (torch.get_rng_state / set_rng_state, every device at once):
 * a state taken and set back replays the same draws on the cpu and on every OpenCL device, a
 * manual seed in between is undone, and a tensor that is not a state is refused with a message. */
#include <string.h>

#include "test_common.h"

enum { N = 64 };

/* n values of ct_rand on device, as floats. */
static void draw(ct_device device, float *out)
{
    ct_tensor *t = ct_rand((int64_t[]){N}, 1, CT_F32, device);
    assert_non_null(t);
    assert_int_equal(ct_tensor_to_array(t, out, N * sizeof *out), CT_OK);
    ct_release(t);
}

static void a_state_set_back_replays_the_same_draws(void **state)
{
    (void)state;
    ct_device devices[1 + 8] = {CT_DEVICE_CPU};
    int count = 1;
    for (int d = 0; d < ct_device_count(CT_OPENCL) && count < 9; d++) devices[count++] = (ct_device){CT_OPENCL, d};
    ct_manual_seed(11);
    float before[N], first[N], again[N];
    for (int i = 0; i < count; i++) draw(devices[i], before); /* every generator has moved on */
    ct_tensor *saved = ct_get_rng_state();
    assert_non_null(saved);
    assert_int_equal(ct_tensor_dtype(saved), CT_I64);
    assert_true(ct_tensor_device(saved).type == CT_CPU);
    for (int i = 0; i < count; i++) {
        draw(devices[i], first);
        ct_manual_seed(99); /* undone by setting the state */
        draw(devices[i], again);
        assert_int_equal(ct_set_rng_state(saved), CT_OK);
        draw(devices[i], again);
        if (memcmp(first, again, sizeof first)) fail_msg("device %d: the draws after set_rng_state differ", i);
        assert_int_equal(ct_set_rng_state(saved), CT_OK);
    }
    assert_true(ct_initial_seed() == 11);
    ct_release(saved);
}

static void what_is_not_a_state_is_refused(void **state)
{
    (void)state;
    assert_int_equal(ct_set_rng_state(NULL), CT_ERR_NULL_ARGUMENT);
    ct_tensor *wrong = ct_zeros((int64_t[]){3}, 1, CT_I64, CT_DEVICE_CPU);
    assert_int_equal(ct_set_rng_state(wrong), CT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(ct_last_error_message(), "state is int64 of 3 values; a state from ct_get_rng_state"));
    ct_release(wrong);
    ct_tensor *saved = ct_get_rng_state();
    ct_tensor *as_float = ct_to_dtype(saved, CT_F32);
    assert_int_equal(ct_set_rng_state(as_float), CT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(ct_last_error_message(), "state is float32"));
    ct_release(as_float);
    ct_release(saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_state_set_back_replays_the_same_draws),
        cmocka_unit_test(what_is_not_a_state_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
