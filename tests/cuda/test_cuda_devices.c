/* CUDA devices as ctorch shows them, on the stand-in driver: count, properties, free and total
 * memory (from any thread: each makes the context current itself), an ordinal that does not
 * exist, `ctorch info`, and CUDA_VISIBLE_DEVICES. ctest runs it in three environments, named by the argument:
 *   (none)    1 stand-in device of 512 MiB
 *   hidden    2 devices, CUDA_VISIBLE_DEVICES="" : CUDA unavailable, with the reason
 *   visible   3 devices of 512, 256 and 128 MiB, CUDA_VISIBLE_DEVICES=2,0 : 2 devices, cuda:0
 *             being physical device 2 (the logical numbering, as PyTorch's)
 *   h100      1 device, CTORCH_CUDA_STANDIN_PROFILE=h100: an H100's properties, and kernels
 *             compiled for compute capability 9.0 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "standin_test.h"
#include "support/run_command.h"

static void test_count_properties_and_memory(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    assert_true(ct_is_available(CT_CUDA));
    assert_int_equal(ct_device_count(CT_CUDA), 1);
    ct_device_props props;
    assert_int_equal(ct_get_device_properties(CUDA0, &props), CT_OK);
    assert_string_equal(props.name, "ctorch stand-in GPU");
    assert_string_equal(props.vendor, "NVIDIA");
    assert_int_equal(props.total_memory, (size_t)512 << 20);
    assert_int_equal(props.compute_units, 4);
    assert_int_equal(props.compute_capability_major, 8);
    assert_int_equal(props.compute_capability_minor, 0);
    assert_true(props.is_gpu);
    assert_false(props.free_memory_is_estimate);
    size_t free_before, total;
    assert_int_equal(ct_mem_get_info(CUDA0, &free_before, &total), CT_OK);
    assert_int_equal(total, (size_t)512 << 20);
    assert_true(free_before <= total);
    /* The driver's free memory: a tensor's block is gone from it. */
    int64_t shape[1] = {4 << 20};
    ct_tensor *t = ct_empty(shape, 1, CT_F32, CUDA0);
    assert_non_null(t);
    size_t free_after;
    assert_int_equal(ct_mem_get_info(CUDA0, &free_after, &total), CT_OK);
    assert_true(free_before - free_after >= (size_t)16 << 20);
    ct_release(t);
    ct_empty_cache(CUDA0);
    assert_int_equal(ct_mem_get_info(CUDA0, &free_after, &total), CT_OK);
    assert_int_equal(free_after, free_before);
}

/* `ctorch info` shows the device with its compute capability, in the table and in JSON. */
static void test_info_command_shows_the_compute_capability(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    static const char *const commands[] = {"'" CTORCH_TOOL_PATH "' info", "'" CTORCH_TOOL_PATH "' info --json"};
    static const char *const expected[] = {"compute capability 8.0", "\"compute_capability\":\"8.0\""};
    for (int i = 0; i < 2; i++) {
        int status;
        char *out = ct_test_run_command(commands[i], &status);
        assert_int_equal(status, 0);
        if (!strstr(out, "ctorch stand-in GPU") || !strstr(out, expected[i]))
            fail_msg("%s lacks the stand-in GPU or '%s':\n%s", commands[i], expected[i], out);
        free(out);
    }
}

static void *memory_info_on_a_new_thread(void *arg)
{
    size_t *sizes = arg;
    ct_status status = ct_mem_get_info(CUDA0, &sizes[0], &sizes[1]);
    return (void *)(intptr_t)status;
}

static void test_a_new_thread_reads_the_device_too(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    size_t sizes[2] = {0, 0};
    pthread_t thread;
    void *status;
    pthread_create(&thread, NULL, memory_info_on_a_new_thread, sizes);
    pthread_join(thread, &status);
    assert_int_equal((ct_status)(intptr_t)status, CT_OK);
    assert_int_equal(sizes[1], (size_t)512 << 20);
}

static void test_an_ordinal_that_does_not_exist_names_the_count(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_device device;
    assert_int_equal(ct_device_parse("cuda:3", &device), CT_ERR_DEVICE);
    assert_error(CT_ERR_DEVICE, "device 'cuda:3' does not exist: there is 1 cuda device; use index 0");
    int64_t shape[1] = {4};
    assert_null(ct_empty(shape, 1, CT_F32, (ct_device){CT_CUDA, 3}));
    assert_error(CT_ERR_DEVICE, "there is 1 cuda device");
    assert_int_equal(ct_device_parse("cuda:0", &device), CT_OK);
    assert_int_equal(device.type, CT_CUDA);
    assert_int_equal(device.index, 0);
}

static void test_hidden_devices_leave_cuda_unavailable_with_the_reason(void **state)
{
    (void)state;
#ifndef CTORCH_HAVE_CUDA
    REQUIRE_CUDA_DEVICES(1);
#endif
    assert_true(ct_backend_is_compiled(CT_CUDA));
    assert_false(ct_is_available(CT_CUDA));
    assert_int_equal(ct_device_count(CT_CUDA), 0);
    const char *reason = ct_backend_unavailable_reason(CT_CUDA);
    if (!strstr(reason, "no CUDA device") || !strstr(reason, "CUDA_VISIBLE_DEVICES"))
        fail_msg("reason '%s' should say there is no device and name CUDA_VISIBLE_DEVICES", reason);
    ct_device device;
    assert_int_equal(ct_device_parse("cuda:0", &device), CT_ERR_UNAVAILABLE);
    assert_error(CT_ERR_UNAVAILABLE, "CUDA_VISIBLE_DEVICES");
    ct_device best;
    assert_int_equal(ct_best_device(&best), CT_OK);
    assert_int_not_equal(best.type, CT_CUDA);
}

static void test_visible_devices_are_numbered_in_their_order(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(2);
    assert_int_equal(ct_device_count(CT_CUDA), 2);
    size_t free_bytes, total;
    assert_int_equal(ct_mem_get_info(CUDA0, &free_bytes, &total), CT_OK);
    assert_int_equal(total, (size_t)128 << 20); /* physical device 2 */
    assert_int_equal(ct_mem_get_info(CUDA1, &free_bytes, &total), CT_OK);
    assert_int_equal(total, (size_t)512 << 20); /* physical device 0 */
    ct_device device;
    assert_int_equal(ct_device_parse("cuda:2", &device), CT_ERR_DEVICE);
    assert_error(CT_ERR_DEVICE, "there are 2 cuda devices");
}

/* Under the H100 profile ctorch sees an H100, compiles its kernels for compute capability 9.0,
 * and the stand-in's launch log shows what an op launched. */
static void test_an_h100_profile_is_an_h100_to_ctorch(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_device_props props;
    assert_int_equal(ct_get_device_properties(CUDA0, &props), CT_OK);
    assert_string_equal(props.name, "NVIDIA H100 80GB HBM3 (stand-in)");
    assert_int_equal(props.compute_units, 132);
    assert_int_equal(props.compute_capability_major, 9);
    assert_int_equal(props.compute_capability_minor, 0);

    ctorch_standin_launch_log_clear_fn clear =
        (ctorch_standin_launch_log_clear_fn)standin_function("ctorch_standin_launch_log_clear");
    ctorch_standin_launch_log_fn read_log = (ctorch_standin_launch_log_fn)standin_function("ctorch_standin_launch_log");
    int64_t shape[1] = {100000};
    ct_tensor *a = ct_full(shape, 1, 1.5, CT_F32, CUDA0), *b = ct_full(shape, 1, 2.0, CT_F32, CUDA0);
    assert_non_null(a);
    assert_non_null(b);
    clear();
    ct_tensor *sum = ct_add(a, b);
    assert_non_null(sum);
    ctorch_standin_launch launches[8];
    size_t count = read_log(launches, 8);
    assert_int_equal(count, 1);
    assert_string_equal(launches[0].kernel, "add_f32");
    assert_int_equal(launches[0].device, 0);
    /* The grid covers every element, 4 to a thread where the operands are aligned (float4). */
    assert_true((long)launches[0].grid_x * launches[0].block_x * 4 >= shape[0]);
    float *values = malloc((size_t)shape[0] * sizeof *values);
    assert_non_null(values);
    read_floats(sum, values, (size_t)shape[0]);
    for (int64_t i = 0; i < shape[0]; i++)
        if (values[i] != 3.5f) fail_msg("element %ld of the sum is %g", (long)i, values[i]);
    free(values);
    ct_release(sum);
    ct_release(a);
    ct_release(b);
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "";
    if (strcmp(scenario, "hidden") == 0) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_hidden_devices_leave_cuda_unavailable_with_the_reason)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    if (strcmp(scenario, "h100") == 0) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_an_h100_profile_is_an_h100_to_ctorch)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    if (strcmp(scenario, "visible") == 0) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_visible_devices_are_numbered_in_their_order)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_count_properties_and_memory),
        cmocka_unit_test(test_info_command_shows_the_compute_capability),
        cmocka_unit_test(test_a_new_thread_reads_the_device_too),
        cmocka_unit_test(test_an_ordinal_that_does_not_exist_names_the_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
