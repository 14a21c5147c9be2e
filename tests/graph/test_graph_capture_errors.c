/* What a capture cannot hold fails with CT_ERR_CAPTURE naming the op and why, abandons the
 * capture, and leaves the stream and the allocator usable (an eager op and a new capture work);
 * graphs used out of turn are refused; tensors freed during a capture stay the graph's until it
 * is freed; clipping is captured, but not a read of its total. On the CPU and on OpenCL (PoCL). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>

#include "tensor/tensor_internal.h"
#include "test_common.h"

static int device_list(ct_device devices[2])
{
    devices[0] = CT_DEVICE_CPU;
    devices[1] = (ct_device){CT_OPENCL, 0};
    return ct_device_count(CT_OPENCL) > 0 ? 2 : 1;
}

static void abandoned_then_usable(ct_device device, const char *op, int kind)
{
    ct_scope_push();
    ct_tensor *x = ct_full((int64_t[]){64}, 1, 2.0, CT_F32, device);
    ct_graph *graph = ct_graph_new();
    assert_int_equal(ct_graph_begin(graph, device, NULL), CT_OK);
    ct_stream *capturing = ct_current_stream(device);
    ct_tensor *y = ct_mul_scalar(x, 3.0);
    assert_non_null(y);
    double value = 0;
    ct_status status = CT_OK;
    switch (kind) {
    case 0: status = ct_item(ct_sum(y, NULL, 0, false), &value); break;
    case 1: status = ct_synchronize(device); break;
    case 2: status = ct_stream_synchronize(capturing); break;
    case 3: status = ct_rand((int64_t[]){4}, 1, CT_F32, device) ? CT_OK : ct_last_error(); break;
    default: {
        float host[4] = {1, 2, 3, 4};
        status = ct_tensor_from_data(host, CT_F32, (int64_t[]){4}, 1, device) ? CT_OK : ct_last_error();
    }
    }
    assert_int_equal(status, CT_ERR_CAPTURE);
    assert_error(CT_ERR_CAPTURE, op);
    /* The capture is over: the thread is back on its stream, and ops run again. */
    assert_null(ct_current_stream(device));
    assert_int_equal(ct_graph_end(graph), CT_ERR_CAPTURE);
    assert_error(CT_ERR_CAPTURE, "abandoned");
    assert_int_equal(ct_graph_replay(graph), CT_ERR_CAPTURE);
    assert_error(CT_ERR_CAPTURE, op);
    ct_tensor *z = ct_add_scalar(ct_mul_scalar(x, 3.0), 1.0);
    assert_int_equal(ct_item(ct_sum(z, NULL, 0, false), &value), CT_OK);
    assert_float_equal(value, 64 * 7.0, 0.0);
    ct_graph_free(graph);

    /* A new capture on the device works. */
    graph = ct_graph_new();
    assert_int_equal(ct_graph_begin(graph, device, NULL), CT_OK);
    ct_tensor *w = ct_mul_scalar(x, 4.0);
    assert_int_equal(ct_graph_end(graph), CT_OK);
    assert_int_equal(ct_graph_replay(graph), CT_OK);
    assert_int_equal(ct_item(ct_sum(w, NULL, 0, false), &value), CT_OK);
    assert_float_equal(value, 64 * 8.0, 0.0);
    ct_graph_free(graph);
    ct_scope_pop();
}

static void host_syncs_and_host_copies_abandon_the_capture(void **state)
{
    (void)state;
    ct_device devices[2];
    for (int d = 0; d < device_list(devices); d++) {
        abandoned_then_usable(devices[d], "ct_tensor_to_array (or ct_item)", 0);
        abandoned_then_usable(devices[d], "ct_synchronize", 1);
        abandoned_then_usable(devices[d], "ct_stream_synchronize", 2);
        abandoned_then_usable(devices[d], "ct_rand", 3);
        abandoned_then_usable(devices[d], "a copy from host memory", 4);
    }
}

static void optimizer_steps_a_replay_would_change_are_refused(void **state)
{
    (void)state;
    ct_device devices[2];
    for (int d = 0; d < device_list(devices); d++) {
        /* Adam that is not capturable; SGD's first step with momentum; a capturable Adam's first
         * step (it makes the state) */
        static const char *const why[3] = {"capturable = true", "SGD's first step", "take a step before"};
        for (int kind = 0; kind < 3; kind++) {
            ct_scope_push();
            ct_tensor *p = ct_full((int64_t[]){8}, 1, 1.0, CT_F32, devices[d]);
            ct_requires_grad_(p, true);
            ct_sgd_options sgd = ct_sgd_options_default(0.1);
            sgd.momentum = 0.9;
            ct_adam_options adam = ct_adam_options_default(0.1);
            adam.capturable = kind == 2;
            ct_optimizer *o = kind != 1 ? ct_optim_adam_params(&p, 1, &adam) : ct_optim_sgd_params(&p, 1, &sgd);
            assert_int_equal(ct_backward(ct_sum(ct_mul(p, p), NULL, 0, false)), CT_OK);
            ct_graph *graph = ct_graph_new();
            assert_int_equal(ct_graph_begin(graph, devices[d], NULL), CT_OK);
            assert_int_equal(ct_optimizer_step(o), CT_ERR_CAPTURE);
            if (kind != 1 && !strstr(ct_last_error_message(), "ct_optimizer_step (Adam)"))
                fail_msg("'%s' does not name the op", ct_last_error_message());
            assert_error(CT_ERR_CAPTURE, why[kind]);
            assert_int_equal(ct_graph_end(graph), CT_ERR_CAPTURE);
            ct_clear_error();
            assert_int_equal(ct_optimizer_step(o), CT_OK); /* eagerly, as before */
            ct_graph_free(graph);
            ct_optimizer_free(o);
            ct_scope_pop();
        }
    }
}

static void graphs_used_out_of_turn_are_refused(void **state)
{
    (void)state;
    ct_device devices[2];
    for (int d = 0; d < device_list(devices); d++) {
        ct_device device = devices[d];
        ct_graph *graph = ct_graph_new(), *other = ct_graph_new();
        assert_int_equal(ct_graph_replay(graph), CT_ERR_CAPTURE);
        assert_error(CT_ERR_CAPTURE, "empty");
        assert_int_equal(ct_graph_end(graph), CT_ERR_CAPTURE);
        assert_error(CT_ERR_CAPTURE, "ct_graph_begin first");
        assert_int_equal(ct_graph_begin(graph, device, NULL), CT_OK);
        assert_int_equal(ct_graph_replay(graph), CT_ERR_CAPTURE);
        assert_error(CT_ERR_CAPTURE, "still capturing");
        assert_int_equal(ct_graph_begin(other, device, NULL), CT_ERR_CAPTURE);
        assert_error(CT_ERR_CAPTURE, "capturing a graph already");
        assert_int_equal(ct_graph_end(graph), CT_OK);
        assert_int_equal(ct_graph_begin(graph, device, NULL), CT_ERR_CAPTURE);
        assert_error(CT_ERR_CAPTURE, "captured once");
        assert_int_equal(ct_graph_replay(graph), CT_OK); /* an empty capture replays nothing */
        ct_graph_free(graph);
        ct_graph_free(other);
    }
    if (ct_device_count(CT_OPENCL) == 0) return;
    ct_stream *stream = ct_stream_create((ct_device){CT_OPENCL, 0});
    ct_graph *graph = ct_graph_new();
    assert_int_equal(ct_graph_begin(graph, CT_DEVICE_CPU, stream), CT_ERR_DEVICE);
    assert_error(CT_ERR_DEVICE, "the stream belongs to opencl:0");
    ct_graph_free(graph);
    ct_stream_destroy(stream);
}

static void tensors_freed_during_a_capture_stay_the_graphs(void **state)
{
    (void)state;
    ct_device devices[2];
    for (int d = 0; d < device_list(devices); d++) {
        ct_device device = devices[d];
        int64_t shape[1] = {1000};
        ct_tensor *before = ct_full(shape, 1, 1.0, CT_F32, device);
        void *handle = ct_tensor_handle(before);
        ct_graph *graph = ct_graph_new();
        assert_int_equal(ct_graph_begin(graph, device, NULL), CT_OK);
        ct_tensor *read = ct_mul_scalar(before, 2.0); /* the graph reads `before` at every replay */
        ct_release(before);
        assert_int_equal(ct_graph_end(graph), CT_OK);
        ct_tensor *after = ct_empty(shape, 1, CT_F32, device);
        assert_ptr_not_equal(ct_tensor_handle(after), handle);
        ct_release(after);
        ct_release(read);
        ct_graph_free(graph); /* the pool goes back to the cache: the memory serves others again */
        after = ct_empty(shape, 1, CT_F32, device);
        assert_ptr_equal(ct_tensor_handle(after), handle);
        ct_release(after);
    }
}

/* A capture cannot check the targets on the host: a class out of range then gives a NaN loss at
 * the replay (and no read out of bounds), and the next replay with good classes is right again. */
static void cross_entropy_in_a_graph_gives_nan_for_a_class_out_of_range(void **state)
{
    (void)state;
    ct_device devices[2];
    for (int d = 0; d < device_list(devices); d++) {
        ct_scope_push();
        ct_tensor *logits = ct_randn((int64_t[]){4, 5}, 2, CT_F32, devices[d]);
        ct_tensor *target = ct_zeros((int64_t[]){4}, 1, CT_I64, devices[d]);
        ct_graph *graph = ct_graph_new();
        assert_int_equal(ct_graph_begin(graph, devices[d], NULL), CT_OK);
        ct_tensor *loss = ct_cross_entropy(logits, target, 0.0);
        assert_non_null(loss);
        assert_int_equal(ct_graph_end(graph), CT_OK);
        const int64_t cases[3][4] = {{0, 1, 2, 4}, {0, 5, 2, 1}, {-1, 1, 2, 3}};
        for (int c = 0; c < 3; c++) {
            ct_tensor *host = ct_tensor_from_data(cases[c], CT_I64, (int64_t[]){4}, 1, CT_DEVICE_CPU);
            assert_int_equal(ct_copy_(target, host), CT_OK);
            assert_int_equal(ct_graph_replay(graph), CT_OK);
            double value = 0;
            assert_int_equal(ct_item(loss, &value), CT_OK);
            if (c == 0) {
                ct_tensor *eager = ct_cross_entropy(logits, target, 0.0);
                double expected = 0;
                assert_int_equal(ct_item(eager, &expected), CT_OK);
                assert_float_equal(value, expected, 0.0);
            } else if (!isnan(value)) {
                fail_msg("targets case %d: loss %g, not NaN", c, value);
            }
        }
        ct_graph_free(graph);
        ct_scope_pop();
    }
}

typedef struct other_thread {
    ct_device device;
    ct_status status;
    char message[600];
} other_thread;

/* ct_clip_grad_norm_ clips inside a capture (on the device, nothing read back), but reading the
 * total back cannot be captured: refused naming total_norm, the capture abandoned; with NULL the
 * captured clipping runs at the replay. */
static void clipping_inside_a_capture_asks_for_no_total(void **state)
{
    (void)state;
    ct_device devices[2];
    for (int d = 0; d < device_list(devices); d++) {
        ct_scope_push();
        ct_tensor *p = ct_zeros((int64_t[]){64}, 1, CT_F32, devices[d]);
        ct_requires_grad_(p, true);
        ct_tensor *twos = ct_full((int64_t[]){64}, 1, 2.0, CT_F32, devices[d]);
        assert_int_equal(ct_backward(ct_sum(ct_mul(p, twos), NULL, 0, false)), CT_OK); /* grad: 2s, norm 16 */
        ct_graph *graph = ct_graph_new();
        assert_int_equal(ct_graph_begin(graph, devices[d], NULL), CT_OK);
        double total = -1;
        assert_int_equal(ct_clip_grad_norm_(&p, 1, 1.0, 2.0, &total), CT_ERR_CAPTURE);
        assert_error(CT_ERR_CAPTURE, "reads total_norm back to the host (pass NULL for it");
        assert_int_equal(ct_graph_end(graph), CT_ERR_CAPTURE);
        assert_error(CT_ERR_CAPTURE, "abandoned");
        ct_graph_free(graph);

        graph = ct_graph_new();
        assert_int_equal(ct_graph_begin(graph, devices[d], NULL), CT_OK);
        assert_int_equal(ct_clip_grad_norm_(&p, 1, 1.0, 2.0, NULL), CT_OK);
        assert_int_equal(ct_graph_end(graph), CT_OK);
        float grad[64];
        assert_int_equal(ct_tensor_to_array(ct_grad(p), grad, sizeof grad), CT_OK);
        assert_true(grad[0] == 2.0f); /* the capture ran nothing */
        assert_int_equal(ct_graph_replay(graph), CT_OK);
        assert_int_equal(ct_tensor_to_array(ct_grad(p), grad, sizeof grad), CT_OK);
        for (int i = 0; i < 64; i++) assert_true(grad[i] == (float)(2.0f * (float)(1.0 / (16.0 + 1e-6))));
        ct_graph_free(graph);
        ct_scope_pop();
    }
}

static void *synchronize_from_another_thread(void *context)
{
    other_thread *t = context;
    t->status = ct_synchronize(t->device);
    snprintf(t->message, sizeof t->message, "%s", ct_last_error_message());
    return NULL;
}

/* Another thread's wait for the device is refused, and the capture goes on. */
static void another_threads_sync_is_refused_and_the_capture_goes_on(void **state)
{
    (void)state;
    ct_device devices[2];
    for (int d = 0; d < device_list(devices); d++) {
        ct_scope_push();
        ct_tensor *x = ct_full((int64_t[]){16}, 1, 1.5, CT_F32, devices[d]);
        ct_graph *graph = ct_graph_new();
        assert_int_equal(ct_graph_begin(graph, devices[d], NULL), CT_OK);
        ct_tensor *y = ct_mul_scalar(x, 2.0);
        pthread_t thread;
        other_thread t = {.device = devices[d]};
        assert_int_equal(pthread_create(&thread, NULL, synchronize_from_another_thread, &t), 0);
        pthread_join(thread, NULL);
        assert_int_equal(t.status, CT_ERR_CAPTURE);
        if (!strstr(t.message, "capturing a graph on another stream")) fail_msg("message: %s", t.message);
        assert_int_equal(ct_graph_end(graph), CT_OK);
        assert_int_equal(ct_graph_replay(graph), CT_OK);
        double value;
        assert_int_equal(ct_item(ct_sum(y, NULL, 0, false), &value), CT_OK);
        assert_float_equal(value, 16 * 3.0, 0.0);
        ct_graph_free(graph);
        ct_scope_pop();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(host_syncs_and_host_copies_abandon_the_capture),
        cmocka_unit_test(optimizer_steps_a_replay_would_change_are_refused),
        cmocka_unit_test(graphs_used_out_of_turn_are_refused),
        cmocka_unit_test(tensors_freed_during_a_capture_stay_the_graphs),
        cmocka_unit_test(another_threads_sync_is_refused_and_the_capture_goes_on),
        cmocka_unit_test(cross_entropy_in_a_graph_gives_nan_for_a_class_out_of_range),
        cmocka_unit_test(clipping_inside_a_capture_asks_for_no_total),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
