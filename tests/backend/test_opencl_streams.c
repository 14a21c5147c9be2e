/* Streams, events, pinned memory and queued copies on real OpenCL devices: work on a stream
 * computes as anywhere and a read on that stream waits for it; an event orders a consumer
 * stream after a producer; synchronizing the device waits for every stream; pinned tensors come
 * from mapped OpenCL buffers; non-blocking copies into and out of them give every byte, keep
 * their source alive, and are counted; so are copies between devices, direct within one context
 * and through the host between two. */
#include "opencl_test.h"
#include "ctorch/stream.h"

static ct_to_options non_blocking_to(ct_device device)
{
    ct_to_options options = ct_to_options_default(device);
    options.non_blocking = true;
    return options;
}

/* Values of a float tensor (any device) into out. */
static void read_floats(const ct_tensor *t, float *out, size_t count)
{
    assert_int_equal(ct_tensor_to_array(t, out, count * sizeof *out), CT_OK);
}

static void work_on_a_stream_is_read_back_on_that_stream(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    ct_stream *s = ct_stream_create(OPENCL0);
    assert_non_null(s);
    assert_int_equal(ct_set_stream(s), CT_OK);
    int64_t shape[1] = {100000};
    ct_tensor *t = ct_full(shape, 1, 1.5, CT_F32, OPENCL0);
    for (int i = 0; i < 20; i++) { /* a queue of kernels, each reading the last */
        ct_tensor *next = ct_add_scalar(t, 1.0);
        ct_release(t);
        t = next;
    }
    static float back[100000];
    read_floats(t, back, 100000); /* blocking, on the current stream: after the adds */
    for (int i = 0; i < 100000; i++) assert_true(back[i] == 21.5f);
    assert_int_equal(ct_stream_synchronize(s), CT_OK);
    ct_release(t);
    ct_set_default_stream(OPENCL0);
    ct_stream_destroy(s);
}

static void an_event_orders_a_consumer_stream_after_a_producer(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    ct_stream *producer = ct_stream_create(OPENCL0), *consumer = ct_stream_create(OPENCL0);
    ct_event *ready = ct_event_create(OPENCL0);
    assert_non_null(ready);
    assert_int_equal(ct_event_synchronize(ready), CT_OK); /* never recorded: already happened */
    int64_t shape[1] = {1 << 20};
    ct_set_stream(producer);
    ct_tensor *t = ct_zeros(shape, 1, CT_F64, OPENCL0);
    for (int i = 0; i < 10; i++) {
        ct_tensor *next = ct_add_scalar(t, 0.5);
        ct_release(t);
        t = next;
    }
    assert_int_equal(ct_event_record(ready, producer), CT_OK);
    ct_set_stream(consumer);
    assert_int_equal(ct_stream_wait_event(consumer, ready), CT_OK);
    ct_tensor *doubled = ct_mul_scalar(t, 2.0); /* queued on the consumer, after the event */
    ct_event *done = ct_event_create(OPENCL0);
    assert_int_equal(ct_event_record(done, NULL), CT_OK); /* the current stream: the consumer */
    assert_int_equal(ct_event_synchronize(done), CT_OK);
    ct_set_default_stream(OPENCL0);
    ct_set_stream(consumer); /* read on the consumer stream */
    double first = 0, last = 0;
    ct_scope_push();
    assert_int_equal(ct_item(ct_select(doubled, 0, 0), &first), CT_OK);
    assert_int_equal(ct_item(ct_select(doubled, 0, (1 << 20) - 1), &last), CT_OK);
    ct_scope_pop();
    assert_true(first == 10.0 && last == 10.0);
    /* an event can be recorded again */
    assert_int_equal(ct_event_record(ready, consumer), CT_OK);
    assert_int_equal(ct_event_synchronize(ready), CT_OK);
    ct_set_default_stream(OPENCL0);
    ct_release(doubled), ct_release(t);
    ct_event_destroy(done), ct_event_destroy(ready);
    ct_stream_destroy(consumer), ct_stream_destroy(producer);
}

static void synchronizing_the_device_waits_for_every_stream(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    ct_stream *streams[3];
    ct_tensor *results[3];
    int64_t shape[1] = {1 << 18};
    for (int s = 0; s < 3; s++) {
        streams[s] = ct_stream_create(OPENCL0);
        ct_set_stream(streams[s]);
        results[s] = ct_full(shape, 1, (double)s, CT_F32, OPENCL0);
    }
    ct_set_default_stream(OPENCL0);
    assert_int_equal(ct_synchronize(OPENCL0), CT_OK);
    /* after the device-wide wait, the default stream reads every stream's result */
    for (int s = 0; s < 3; s++) {
        static float back[1 << 18];
        read_floats(results[s], back, 1 << 18);
        assert_true(back[0] == (float)s && back[(1 << 18) - 1] == (float)s);
        ct_release(results[s]);
    }
    ct_stream_destroy(streams[1]); /* out of creation order */
    ct_stream_destroy(streams[0]);
    ct_stream_destroy(streams[2]);
    assert_int_equal(ct_synchronize(OPENCL0), CT_OK);
}

static void pinned_tensors_come_from_opencl(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    int64_t shape[2] = {64, 64};
    ct_tensor *pinned = ct_empty_pinned(shape, 2, CT_F32);
    assert_non_null(pinned);
    assert_true(ct_is_pinned(pinned));
    assert_true(ct_device_equal(ct_tensor_device(pinned), CT_DEVICE_CPU));
    ct_tensor *values = ct_arange(0, 4096, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *square = ct_reshape(values, shape, 2);
    assert_int_equal(ct_copy_(pinned, square), CT_OK);
    ct_tensor *pinned_copy = ct_pin_memory(square);
    assert_true(ct_is_pinned(pinned_copy));
    static float back[4096];
    read_floats(pinned_copy, back, 4096);
    for (int i = 0; i < 4096; i++) assert_true(back[i] == (float)i);
    ct_release(pinned_copy), ct_release(square), ct_release(values), ct_release(pinned);
}

static void non_blocking_copies_through_pinned_memory_keep_every_byte(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(2);
    enum { N = 1 << 20 };
    int64_t shape[1] = {N};
    ct_tensor *host = ct_empty_pinned(shape, 1, CT_I32);
    ct_tensor *values = ct_arange(0, N, 1, CT_I32, CT_DEVICE_CPU);
    assert_int_equal(ct_copy_(host, values), CT_OK);
    ct_release(values);
    for (int d = 0; d < 2; d++) {
        ct_device device = {CT_OPENCL, d};
        ct_transfer_stats_reset(device);
        ct_to_options up = non_blocking_to(device);
        ct_tensor *on_device = ct_to_with(host, &up);
        assert_non_null(on_device);
        ct_tensor *plus = ct_add_scalar(on_device, 1.0); /* queued after the upload: int32 */
        ct_to_options down = non_blocking_to(CT_DEVICE_CPU);
        ct_tensor *result = ct_to_with(plus, &down);
        assert_non_null(result);
        assert_true(ct_is_pinned(result));
        ct_release(plus), ct_release(on_device); /* the queued download keeps its source */
        ct_tensor *twice = ct_add(result, result); /* on the CPU: waits for the download */
        static int32_t back[N];
        assert_int_equal(ct_tensor_dtype(twice), CT_I32);
        assert_int_equal(ct_tensor_to_array(twice, back, sizeof back), CT_OK);
        for (int i = 0; i < N; i++)
            if (back[i] != 2 * (i + 1)) fail_msg("opencl:%d element %d is %d", d, i, back[i]);
        ct_transfer_stats stats;
        ct_transfer_stats_get(device, &stats);
        assert_int_equal(stats.host_to_device_bytes, (uint64_t)N * 4);
        assert_int_equal(stats.device_to_host_bytes, (uint64_t)N * 4);
        ct_release(twice), ct_release(result);
    }
    /* the source released while its upload may still be queued */
    ct_to_options up = non_blocking_to(OPENCL0);
    ct_tensor *on_device = ct_to_with(host, &up);
    ct_release(host);
    static int32_t ints[N];
    assert_int_equal(ct_tensor_to_array(on_device, ints, sizeof ints), CT_OK);
    for (int i = 0; i < N; i++) assert_int_equal(ints[i], i);
    ct_release(on_device);
}

static void non_blocking_from_unpinned_memory_is_done_blocking(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    int64_t shape[1] = {333};
    ct_tensor *plain = ct_full(shape, 1, -4.0, CT_F64, CT_DEVICE_CPU);
    ct_to_options options = non_blocking_to(OPENCL0);
    ct_tensor *device = ct_to_with(plain, &options);
    ct_release(plain); /* a blocking copy is done: nothing refers to it any more */
    double back[333];
    assert_int_equal(ct_tensor_to_array(device, back, sizeof back), CT_OK);
    for (int i = 0; i < 333; i++) assert_true(back[i] == -4.0);
    ct_release(device);
}

/* Devices of one context (PoCL's two) copy directly: no trip through the host. */
static void copies_between_devices_are_counted_as_peer_copies(void **state)
{
    (void)state;
    int a = 0, b = 0;
    REQUIRE_OPENCL_DEVICES_IN_ONE_CONTEXT(a, b);
    const ct_device from = {CT_OPENCL, a}, to = {CT_OPENCL, b};
    int64_t shape[1] = {256};
    ct_tensor *on_a = ct_ones(shape, 1, CT_F32, from);
    ct_transfer_stats_reset(from);
    ct_transfer_stats_reset(to);
    ct_tensor *on_b = ct_to(on_a, to);
    ct_transfer_stats s0, s1;
    ct_transfer_stats_get(from, &s0);
    ct_transfer_stats_get(to, &s1);
    assert_int_equal(s1.device_to_device_bytes, 1024);
    assert_int_equal(s0.device_to_host_bytes + s1.host_to_device_bytes, 0);
    ct_release(on_b), ct_release(on_a);
}

/* Devices of two platforms (a GPU's and PoCL's) share no context: a copy between them is counted
 * as what it is, a download from one and an upload to the other. */
static void copies_between_contexts_are_counted_through_the_host(void **state)
{
    (void)state;
    int a = 0, b = 0;
    REQUIRE_OPENCL_DEVICES_IN_TWO_CONTEXTS(a, b);
    const ct_device from = {CT_OPENCL, a}, to = {CT_OPENCL, b};
    int64_t shape[1] = {256};
    ct_tensor *on_a = ct_ones(shape, 1, CT_F32, from);
    ct_transfer_stats_reset(from);
    ct_transfer_stats_reset(to);
    ct_tensor *on_b = ct_to(on_a, to);
    float back[256];
    assert_int_equal(ct_tensor_to_array(on_b, back, sizeof back), CT_OK);
    for (int i = 0; i < 256; i++) assert_true(back[i] == 1.0f);
    ct_transfer_stats s0, s1;
    ct_transfer_stats_get(from, &s0);
    ct_transfer_stats_get(to, &s1);
    assert_int_equal(s0.device_to_host_bytes, 1024);
    assert_int_equal(s1.host_to_device_bytes, 1024);
    assert_int_equal(s1.device_to_device_bytes, 0);
    ct_release(on_b), ct_release(on_a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(work_on_a_stream_is_read_back_on_that_stream),
        cmocka_unit_test(an_event_orders_a_consumer_stream_after_a_producer),
        cmocka_unit_test(synchronizing_the_device_waits_for_every_stream),
        cmocka_unit_test(pinned_tensors_come_from_opencl),
        cmocka_unit_test(non_blocking_copies_through_pinned_memory_keep_every_byte),
        cmocka_unit_test(non_blocking_from_unpinned_memory_is_done_blocking),
        cmocka_unit_test(copies_between_devices_are_counted_as_peer_copies),
        cmocka_unit_test(copies_between_contexts_are_counted_through_the_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
