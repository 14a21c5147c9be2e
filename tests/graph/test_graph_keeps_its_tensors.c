/* A graph keeps the tensors from before its capture that its work reads and writes: a static input
 * or output released after the capture keeps its memory, so a tensor made later never takes it
 * and a replay neither reads nor overwrites that tensor; and a replay after ct_module_to moved the
 * captured parameters is refused with CT_ERR_CAPTURE naming the tensor, where it used to return
 * CT_OK and update the memory they left. On the CPU and on OpenCL (PoCL). */
#include <math.h>

#include "test_common.h"

static double sum_of(const ct_tensor *t)
{
    double value = NAN;
    ct_scope_push();
    assert_int_equal(ct_item(ct_sum(t, NULL, 0, false), &value), CT_OK);
    ct_scope_pop();
    return value;
}

static void released_static_tensors_keep_their_memory(ct_device device)
{
    enum { N = 4096 };
    ct_tensor *x = ct_full((int64_t[]){N}, 1, 1.0, CT_F32, device);
    ct_tensor *out = ct_zeros((int64_t[]){N}, 1, CT_F32, device);
    ct_tensor *kept = ct_zeros((int64_t[]){N}, 1, CT_F32, device);
    ct_graph *graph = ct_graph_new();
    assert_int_equal(ct_graph_begin(graph, device, NULL), CT_OK);
    ct_scope_push();
    assert_int_equal(ct_copy_(out, ct_mul_scalar(x, 2.0)), CT_OK);
    assert_int_equal(ct_copy_(kept, out), CT_OK);
    ct_scope_pop();
    assert_int_equal(ct_graph_end(graph), CT_OK);
    /* The input and the output released; new tensors of their size are made at once (the cache
     * would hand them the blocks just freed). */
    ct_release(x);
    ct_release(out);
    ct_tensor *a = ct_full((int64_t[]){N}, 1, 5.0, CT_F32, device);
    ct_tensor *b = ct_full((int64_t[]){N}, 1, 7.0, CT_F32, device);
    assert_int_equal(ct_graph_replay(graph), CT_OK);
    assert_float_equal(sum_of(kept), 2.0 * N, 0.0); /* read the kept input's 1, not a's 5 */
    assert_float_equal(sum_of(a), 5.0 * N, 0.0);
    assert_float_equal(sum_of(b), 7.0 * N, 0.0);    /* not overwritten by the replay */
    ct_graph_free(graph);
    ct_release(a);
    ct_release(b);
    ct_release(kept);
}

static void released_static_tensors_keep_their_memory_on_the_cpu(void **state)
{
    (void)state;
    released_static_tensors_keep_their_memory(CT_DEVICE_CPU);
}

static void released_static_tensors_keep_their_memory_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    released_static_tensors_keep_their_memory((ct_device){CT_OPENCL, 0});
}

static void a_replay_after_the_model_moved_is_refused(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    ct_device cpu = CT_DEVICE_CPU, opencl = {CT_OPENCL, 0};
    const ct_device from[2] = {cpu, opencl}, to[2] = {opencl, cpu};
    for (int k = 0; k < 2; k++) {
        ct_manual_seed(1);
        ct_module *model = ct_linear(8, 3, true);
        assert_int_equal(ct_module_to(model, from[k]), CT_OK);
        ct_tensor *x = ct_full((int64_t[]){4, 8}, 2, 1.0, CT_F32, from[k]);
        ct_tensor *out = ct_zeros((int64_t[]){4, 3}, 2, CT_F32, from[k]);
        ct_graph *graph = ct_graph_new();
        ct_no_grad_push();
        assert_int_equal(ct_graph_begin(graph, from[k], NULL), CT_OK);
        ct_scope_push();
        assert_int_equal(ct_copy_(out, ct_module_forward(model, x)), CT_OK);
        ct_scope_pop();
        assert_int_equal(ct_graph_end(graph), CT_OK);
        ct_no_grad_pop();
        assert_int_equal(ct_graph_replay(graph), CT_OK);
        if (ct_module_to(model, to[k]) != CT_OK) fail_msg("%s", ct_last_error_message());
        assert_int_equal(ct_graph_replay(graph), CT_ERR_CAPTURE);
        assert_non_null(strstr(ct_last_error_message(), "capture a new graph after moving"));
        assert_error(CT_ERR_CAPTURE, "ct_graph_replay: a tensor the graph reads or writes ([3, 8] float32) has "
                     "moved since the capture");
        ct_graph_free(graph);
        ct_release(x);
        ct_release(out);
        ct_module_release(model);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(released_static_tensors_keep_their_memory_on_the_cpu),
        cmocka_unit_test(released_static_tensors_keep_their_memory_on_opencl),
        cmocka_unit_test(a_replay_after_the_model_moved_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
