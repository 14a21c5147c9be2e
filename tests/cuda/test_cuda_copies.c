/* ct_to between the CPU and CUDA devices, on 2 stand-in devices whose streams run on their own
 * threads, each queued operation paused a little (CTORCH_CUDA_STANDIN_DELAY_US, set by ctest), so
 * that a copy read before it has finished reads the wrong values: to a device and back, from one
 * device to the other, from a thread that never used CUDA, and non-blocking copies from pinned
 * memory on streams ordered by events; and overlapping ranges of one device move as memmove does. */
#include <pthread.h>

#include "standin_test.h"

#include "ctorch/stream.h"
#include "device/backend_interface.h"
#include "tensor/tensor_internal.h"

enum { N = 1000 };

static ct_tensor *cpu_sequence(float start)
{
    float values[N];
    for (int i = 0; i < N; i++) values[i] = start + (float)i * 0.5f;
    int64_t shape[2] = {10, N / 10};
    return ct_tensor_from_data(values, CT_F32, shape, 2, CT_DEVICE_CPU);
}

static void expect_sequence(const ct_tensor *t, float start)
{
    float back[N];
    read_floats(t, back, N);
    for (int i = 0; i < N; i++)
        if (back[i] != start + (float)i * 0.5f) fail_msg("element %d: %g, not %g", i, back[i], start + (float)i * 0.5f);
}

static void test_to_a_device_and_back_keeps_the_values(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_tensor *x = cpu_sequence(1.0f);
    ct_transfer_stats_reset(CUDA0);
    ct_tensor *on_gpu = ct_to(x, CUDA0);
    assert_non_null(on_gpu);
    assert_true(ct_device_equal(ct_tensor_device(on_gpu), CUDA0));
    assert_true(ct_device_equal(ct_tensor_device(x), CT_DEVICE_CPU)); /* the original stays */
    ct_tensor *same = ct_to(on_gpu, CUDA0);
    assert_ptr_equal(same, on_gpu); /* already there: itself, as PyTorch's self */
    ct_release(same);
    ct_tensor *back = ct_to(on_gpu, CT_DEVICE_CPU);
    expect_sequence(back, 1.0f);
    expect_sequence(on_gpu, 1.0f); /* read straight from the device */
    ct_transfer_stats stats;
    assert_int_equal(ct_transfer_stats_get(CUDA0, &stats), CT_OK);
    assert_int_equal(stats.host_to_device_bytes, N * sizeof(float));
    assert_int_equal(stats.device_to_host_bytes, 2 * N * sizeof(float));
    ct_release(back), ct_release(on_gpu), ct_release(x);
}

static void test_from_one_device_to_the_other(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(2);
    ct_tensor *x = cpu_sequence(-3.0f);
    ct_tensor *a = ct_to(x, CUDA0);
    ctorch_standin_counts before = standin_counts();
    ct_tensor *b = ct_to(a, CUDA1);
    ctorch_standin_counts after = standin_counts();
    assert_non_null(b);
    assert_true(ct_device_equal(ct_tensor_device(b), CUDA1));
    assert_int_equal(after.memcpy_peer - before.memcpy_peer, 1);
    expect_sequence(b, -3.0f);
    ct_tensor *c = ct_to(b, CUDA0); /* and back */
    expect_sequence(c, -3.0f);
    ct_release(c), ct_release(b), ct_release(a), ct_release(x);
}

static void *round_trip_on_a_new_thread(void *arg)
{
    const ct_tensor *x = arg;
    ct_tensor *on_gpu = ct_to(x, CUDA1);
    ct_tensor *back = on_gpu ? ct_to(on_gpu, CT_DEVICE_CPU) : NULL;
    ct_release(on_gpu);
    return back;
}

static void test_from_a_thread_that_never_used_cuda(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(2);
    ct_tensor *x = cpu_sequence(7.0f);
    pthread_t thread;
    void *back;
    pthread_create(&thread, NULL, round_trip_on_a_new_thread, x);
    pthread_join(thread, &back);
    if (!back) fail_msg("the thread's copies failed: %s", ct_last_error_message());
    expect_sequence(back, 7.0f);
    ct_release(back), ct_release(x);
}

static void test_non_blocking_copies_from_pinned_memory_on_streams(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_tensor *x = cpu_sequence(2.0f);
    ct_tensor *pinned = ct_pin_memory(x);
    assert_non_null(pinned);
    assert_true(ct_is_pinned(pinned));
    ct_stream *copy_stream = ct_stream_create(CUDA0), *compute_stream = ct_stream_create(CUDA0);
    ct_event *copied = ct_event_create(CUDA0);
    assert_non_null(copy_stream);
    assert_non_null(copied);

    ctorch_standin_counts before = standin_counts();
    assert_int_equal(ct_set_stream(copy_stream), CT_OK);
    ct_to_options to_gpu = ct_to_options_default(CUDA0);
    to_gpu.non_blocking = true;
    ct_tensor *on_gpu = ct_to_with(pinned, &to_gpu);
    assert_non_null(on_gpu);
    ct_release(pinned); /* the queued copy keeps its source */
    assert_int_equal(ct_event_record(copied, copy_stream), CT_OK);

    /* Another stream reads it after the event; the result comes back non-blocking, pinned. */
    assert_int_equal(ct_set_stream(compute_stream), CT_OK);
    assert_int_equal(ct_stream_wait_event(compute_stream, copied), CT_OK);
    ct_to_options to_cpu = ct_to_options_default(CT_DEVICE_CPU);
    to_cpu.non_blocking = true;
    ct_tensor *back = ct_to_with(on_gpu, &to_cpu);
    assert_non_null(back);
    assert_true(ct_is_pinned(back));
    ctorch_standin_counts after = standin_counts();
    assert_int_equal(after.memcpy_async - before.memcpy_async, 2);
    expect_sequence(back, 2.0f); /* reading waits for exactly that copy */

    assert_int_equal(ct_set_default_stream(CUDA0), CT_OK);
    ct_release(back), ct_release(on_gpu), ct_release(x);
    ct_event_destroy(copied);
    ct_stream_destroy(copy_stream);
    ct_stream_destroy(compute_stream);
    assert_int_equal(ct_synchronize(CUDA0), CT_OK);
}

static void test_overlapping_ranges_on_one_device_move_as_memmove_does(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    const ct_backend *backend = ct_backend_of(CUDA0);
    assert_non_null(backend);
    ct_tensor *t = ct_arange(0, 1000, 1, CT_I32, CUDA0);
    assert_non_null(t);
    int back[1000];
    /* 100 elements from 0 to 1 (forwards), then 100 from 501 to 500 (backwards) */
    assert_int_equal(backend->copy_device_to_device(0, ct_tensor_handle(t), 4, ct_tensor_handle(t), 0, 100 * 4), CT_OK);
    assert_int_equal(backend->copy_device_to_device(0, ct_tensor_handle(t), 500 * 4, ct_tensor_handle(t), 501 * 4, 100 * 4),
                     CT_OK);
    assert_int_equal(ct_tensor_to_array(t, back, sizeof back), CT_OK);
    for (int i = 0; i < 1000; i++) {
        int want = i >= 1 && i <= 100 ? i - 1 : i >= 500 && i < 600 ? i + 1 : i;
        if (back[i] != want) fail_msg("element %d: %d, not %d", i, back[i], want);
    }
    ct_release(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_to_a_device_and_back_keeps_the_values),
        cmocka_unit_test(test_from_one_device_to_the_other),
        cmocka_unit_test(test_from_a_thread_that_never_used_cuda),
        cmocka_unit_test(test_non_blocking_copies_from_pinned_memory_on_streams),
        cmocka_unit_test(test_overlapping_ranges_on_one_device_move_as_memmove_does),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
