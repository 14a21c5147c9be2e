/* Streams and events: a current stream per device and thread, events recorded and waited for,
 * and clear errors for mixing devices. */
#include <pthread.h>

#include "support/fake_device.h"
#include "test_common.h"

static const ct_device OPENCL0 = {CT_OPENCL, 0}, OPENCL1 = {CT_OPENCL, 1};

static void a_stream_becomes_current_for_its_device_only(void **state)
{
    (void)state;
    assert_null(ct_current_stream(OPENCL0));
    ct_stream *s = ct_stream_create(OPENCL0);
    assert_non_null(s);
    assert_true(ct_device_equal(ct_stream_device(s), OPENCL0));
    assert_int_equal(ct_set_stream(s), CT_OK);
    assert_ptr_equal(ct_current_stream(OPENCL0), s);
    assert_null(ct_current_stream(OPENCL1));
    /* work queued there computes as anywhere */
    int64_t shape[1] = {8};
    ct_tensor *t = ct_full(shape, 1, 2.0, CT_F32, OPENCL0);
    ct_tensor *u = ct_mul(t, t);
    assert_int_equal(ct_stream_synchronize(s), CT_OK);
    double v = 0;
    ct_scope_push(); /* releases the selected view */
    assert_int_equal(ct_item(ct_select(u, 0, 7), &v), CT_OK);
    ct_scope_pop();
    assert_true(v == 4.0);
    assert_int_equal(ct_set_default_stream(OPENCL0), CT_OK);
    assert_null(ct_current_stream(OPENCL0));
    ct_set_stream(s);
    ct_stream_destroy(s); /* the thread goes back to the default stream */
    assert_null(ct_current_stream(OPENCL0));
    ct_release(u);
    ct_release(t);
}

static void *current_stream_of_new_thread(void *out)
{
    *(ct_stream **)out = ct_current_stream(OPENCL0);
    return NULL;
}

static void the_current_stream_is_per_thread(void **state)
{
    (void)state;
    ct_stream *s = ct_stream_create(OPENCL0);
    ct_set_stream(s);
    ct_stream *seen = s;
    pthread_t thread;
    pthread_create(&thread, NULL, current_stream_of_new_thread, &seen);
    pthread_join(thread, NULL);
    assert_null(seen);
    ct_stream_destroy(s);
}

static void events_order_streams_and_the_host(void **state)
{
    (void)state;
    ct_stream *producer = ct_stream_create(OPENCL0), *consumer = ct_stream_create(OPENCL0);
    ct_event *ready = ct_event_create(OPENCL0);
    assert_non_null(ready);
    assert_int_equal(ct_event_record(ready, producer), CT_OK);
    assert_int_equal(ct_stream_wait_event(consumer, ready), CT_OK);
    assert_int_equal(ct_event_record(ready, NULL), CT_OK); /* the current stream */
    assert_int_equal(ct_event_synchronize(ready), CT_OK);
    ct_event_destroy(ready);
    ct_stream_destroy(consumer);
    ct_stream_destroy(producer);
}

static void streams_and_events_of_two_devices_do_not_mix(void **state)
{
    (void)state;
    ct_stream *s1 = ct_stream_create(OPENCL1);
    ct_event *e0 = ct_event_create(OPENCL0);
    assert_int_equal(ct_event_record(e0, s1), CT_ERR_DEVICE);
    assert_error(CT_ERR_DEVICE, "the event belongs to opencl:0 and the stream to opencl:1");
    assert_int_equal(ct_stream_wait_event(s1, e0), CT_ERR_DEVICE);
    ct_clear_error();
    assert_null(ct_stream_create((ct_device){CT_OPENCL, 5}));
    assert_error(CT_ERR_DEVICE, "opencl:5");
    assert_int_equal(ct_set_stream(NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_set_default_stream");
    assert_int_equal(ct_event_record(NULL, NULL), CT_ERR_NULL_ARGUMENT);
    ct_clear_error();
    ct_event_destroy(NULL);
    ct_stream_destroy(NULL);
    ct_event_destroy(e0);
    ct_stream_destroy(s1);
}

static void cpu_streams_are_trivially_in_order(void **state)
{
    (void)state;
    ct_stream *s = ct_stream_create(CT_DEVICE_CPU);
    assert_non_null(s);
    ct_event *e = ct_event_create(CT_DEVICE_CPU);
    assert_int_equal(ct_event_record(e, s), CT_OK);
    assert_int_equal(ct_event_synchronize(e), CT_OK);
    assert_int_equal(ct_stream_synchronize(s), CT_OK);
    ct_event_destroy(e);
    ct_stream_destroy(s);
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_stream_becomes_current_for_its_device_only),
        cmocka_unit_test(the_current_stream_is_per_thread),
        cmocka_unit_test(events_order_streams_and_the_host),
        cmocka_unit_test(streams_and_events_of_two_devices_do_not_mix),
        cmocka_unit_test(cpu_streams_are_trivially_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
