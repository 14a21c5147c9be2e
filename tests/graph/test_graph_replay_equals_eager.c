/* A whole training step captured once and replayed equals the same steps run eagerly, bit for
 * bit, on the CPU and on every OpenCL device (PoCL): the parameters and the loss. Replays allocate
 * nothing and issue the launches of an eager step without the op layer's work. */
#include "graph/graph_step.h"

static void replay_equals_eager_on_the_cpu(void **state)
{
    (void)state;
    step_check_replay_equals_eager(CT_DEVICE_CPU, -1);
}

static void replay_equals_eager_on_opencl(void **state)
{
    (void)state;
    int count = ct_device_count(CT_OPENCL);
    if (count == 0) skip();
    for (int i = 0; i < count; i++) step_check_replay_equals_eager((ct_device){CT_OPENCL, i}, -1);
}

/* Work on the default stream that takes a while on any device (PoCL's included), so that what
 * another stream runs without waiting for it runs first. */
static void keep_the_default_stream_busy(ct_device device)
{
    ct_tensor *a = ct_full((int64_t[]){1 << 22}, 1, 1.0, CT_F32, device);
    for (int i = 0; i < 16; i++) {
        ct_tensor *b = ct_exp(a);
        ct_release(a);
        a = ct_mul_scalar(b, 0.5);
        ct_release(b);
    }
    assert_non_null(a);
    ct_release(a);
}

/* A graph replays on the thread's current stream at the time, after what was queued there. */
static void replay_runs_on_the_current_stream(void **state)
{
    (void)state;
    ct_device devices[2] = {CT_DEVICE_CPU, {CT_OPENCL, 0}};
    for (int d = 0; d < (ct_device_count(CT_OPENCL) > 0 ? 2 : 1); d++) {
        ct_device device = devices[d];
        keep_the_default_stream_busy(device);
        ct_tensor *x = ct_full((int64_t[]){1000}, 1, 1.0, CT_F32, device);
        ct_graph *graph = ct_graph_new();
        assert_int_equal(ct_graph_begin(graph, device, NULL), CT_OK);
        ct_tensor *twice = ct_mul_scalar(x, 2.0);
        ct_tensor *y = ct_add(twice, x);
        assert_non_null(y);
        assert_int_equal(ct_graph_end(graph), CT_OK);
        ct_stream *stream = ct_stream_create(device);
        /* x was filled on the default stream: the side stream waits for that before it writes x,
         * as PyTorch's s.wait_stream(current_stream()) (without it the fill may come last). */
        ct_event *filled = ct_event_create(device);
        assert_int_equal(ct_event_record(filled, NULL), CT_OK);
        assert_int_equal(ct_stream_wait_event(stream, filled), CT_OK);
        assert_int_equal(ct_set_stream(stream), CT_OK);
        ct_tensor *five = ct_full((int64_t[]){1000}, 1, 5.0, CT_F32, device);
        assert_int_equal(ct_copy_(x, five), CT_OK); /* queued on the stream, before the replay */
        assert_int_equal(ct_graph_replay(graph), CT_OK);
        float values[1000];
        assert_int_equal(ct_tensor_to_array(y, values, sizeof values), CT_OK);
        for (int i = 0; i < 1000; i++) assert_float_equal(values[i], 15.0f, 0.0f);
        assert_int_equal(ct_set_default_stream(device), CT_OK);
        assert_int_equal(ct_synchronize(device), CT_OK);
        assert_int_equal(ct_tensor_to_array(x, values, sizeof values), CT_OK);
        for (int i = 0; i < 1000; i++) assert_float_equal(values[i], 5.0f, 0.0f); /* the copy came last */
        ct_release(five);
        ct_release(twice);
        ct_release(y);
        ct_graph_free(graph);
        ct_event_destroy(filled);
        ct_stream_destroy(stream);
        ct_release(x);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(replay_equals_eager_on_the_cpu),
        cmocka_unit_test(replay_equals_eager_on_opencl),
        cmocka_unit_test(replay_runs_on_the_current_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
