/* Streams and events of ctorch's CUDA backend on the stand-in, whose streams run on their own
 * threads with every queued operation paused (CTORCH_CUDA_STANDIN_DELAY_US, set by ctest), so
 * that ordering that is missing shows as wrong values: kernels queued on a stream are read back
 * on it after them, an event orders a consumer stream after a producer, and synchronizing the
 * device waits for every stream. */
#include "standin_test.h"

#include "ctorch/stream.h"

static void test_work_on_a_stream_is_read_back_on_that_stream(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_stream *s = ct_stream_create(CUDA0);
    assert_non_null(s);
    assert_int_equal(ct_set_stream(s), CT_OK);
    ctorch_standin_counts before = standin_counts();
    int64_t shape[1] = {5000};
    ct_tensor *t = ct_full(shape, 1, 1.5, CT_F32, CUDA0);
    for (int i = 0; i < 10; i++) { /* a queue of kernels, each reading the last */
        ct_tensor *next = ct_add_scalar(t, 1.0);
        ct_release(t);
        t = next;
    }
    assert_true(standin_counts().launches - before.launches >= 11);
    static float back[5000];
    read_floats(t, back, 5000); /* blocking, on the current stream: after the adds */
    for (int i = 0; i < 5000; i++) assert_true(back[i] == 11.5f);
    ct_release(t);
    assert_int_equal(ct_set_default_stream(CUDA0), CT_OK);
    ct_stream_destroy(s);
}

static void test_an_event_orders_a_consumer_stream_after_a_producer(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_stream *producer = ct_stream_create(CUDA0), *consumer = ct_stream_create(CUDA0);
    ct_event *ready = ct_event_create(CUDA0), *done = ct_event_create(CUDA0);
    assert_non_null(ready);
    assert_int_equal(ct_event_synchronize(ready), CT_OK); /* never recorded: already happened */
    int64_t shape[1] = {4096};
    ct_set_stream(producer);
    ct_tensor *t = ct_zeros(shape, 1, CT_F64, CUDA0);
    for (int i = 0; i < 10; i++) {
        ct_tensor *next = ct_add_scalar(t, 0.5);
        ct_release(t);
        t = next;
    }
    assert_int_equal(ct_event_record(ready, producer), CT_OK);
    ct_set_stream(consumer);
    assert_int_equal(ct_stream_wait_event(consumer, ready), CT_OK);
    ct_tensor *doubled = ct_mul_scalar(t, 2.0); /* queued on the consumer, after the event */
    assert_int_equal(ct_event_record(done, NULL), CT_OK); /* the current stream: the consumer */
    assert_int_equal(ct_event_synchronize(done), CT_OK);
    double first = 0, last = 0;
    ct_scope_push();
    assert_int_equal(ct_item(ct_select(doubled, 0, 0), &first), CT_OK);
    assert_int_equal(ct_item(ct_select(doubled, 0, 4095), &last), CT_OK);
    ct_scope_pop();
    assert_true(first == 10.0 && last == 10.0);
    ct_set_default_stream(CUDA0);
    ct_release(doubled), ct_release(t);
    ct_event_destroy(ready), ct_event_destroy(done);
    ct_stream_destroy(producer), ct_stream_destroy(consumer);
}

/* Intermediate results stay alive until the device is synchronized, which the caching allocator
 * no longer needs (a block released while its stream's kernels run goes back to that stream's
 * pool only, tests/alloc/test_allocator_streams.c): here it keeps the test about synchronize. */
static void test_synchronize_waits_for_every_stream(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_stream *streams[2] = {ct_stream_create(CUDA0), ct_stream_create(CUDA0)};
    ct_tensor *results[2];
    int64_t shape[1] = {2048};
    ct_scope_push();
    for (int k = 0; k < 2; k++) {
        ct_set_stream(streams[k]);
        results[k] = ct_full(shape, 1, (double)k, CT_F32, CUDA0);
        for (int i = 0; i < 5; i++) results[k] = ct_add_scalar(results[k], 1.0);
        ct_scope_keep(results[k]);
    }
    ct_set_default_stream(CUDA0);
    assert_int_equal(ct_synchronize(CUDA0), CT_OK);
    ct_scope_pop();
    /* Read on the default stream, which does not wait for ctorch's streams by itself. */
    for (int k = 0; k < 2; k++) {
        double value = 0;
        ct_scope_push();
        assert_int_equal(ct_item(ct_select(results[k], 0, 2047), &value), CT_OK);
        ct_scope_pop();
        if (value != 5.0 + k) fail_msg("stream %d: %g, not %g", k, value, 5.0 + k);
        ct_release(results[k]);
    }
    ct_stream_destroy(streams[0]), ct_stream_destroy(streams[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_work_on_a_stream_is_read_back_on_that_stream),
        cmocka_unit_test(test_an_event_orders_a_consumer_stream_after_a_producer),
        cmocka_unit_test(test_synchronize_waits_for_every_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
