/* Graphs on CUDA through the driver's stream capture, on the stand-in driver and cuBLAS: a whole
 * training step replayed equals the eager steps bit for bit, as one graph launch a step (its
 * kernels and cuBLAS products run inside it); a synchronisation of a capturing stream invalidates
 * the capture in the driver, and ctorch refuses it first; an allocation the graph's pool cannot
 * serve abandons the capture; the stream and the allocator stay usable after either. */
#include "backend/cuda/cuda_libraries.h"
#include "graph/graph_step.h"
#include "standin_test.h"
#include "tensor/tensor_internal.h"

static long graph_launches(void) { return standin_counts().graph_launches; }

static void replay_equals_eager_as_one_graph_launch(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    long before = graph_launches();
    step_check_replay_equals_eager(CUDA0, 0); /* no kernel launched by ctorch: the graph's */
    assert_int_equal(graph_launches() - before, STEP_KINDS_CHECKED * (STEP_BATCHES - 1));
}

/* y = x w captured: replays after refilling x compute the new product (cuBLAS ran inside the
 * graph), while cuBLAS itself is called only at the capture. */
static void cublas_products_run_inside_the_graph(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ctorch_standin_cublas_gemm_log_fn gemm_log =
        (ctorch_standin_cublas_gemm_log_fn)standin_cublas_function("ctorch_standin_cublas_gemm_log");
    ctorch_standin_cublas_gemm_log_clear_fn gemm_log_clear =
        (ctorch_standin_cublas_gemm_log_clear_fn)standin_cublas_function("ctorch_standin_cublas_gemm_log_clear");
    ct_scope_push();
    ct_tensor *w_cpu = ct_randn((int64_t[]){8, 6}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *w = ct_to(w_cpu, CUDA0);
    ct_tensor *x = ct_zeros((int64_t[]){5, 8}, 2, CT_F32, CUDA0);
    gemm_log_clear();
    ct_graph *graph = ct_graph_new();
    assert_int_equal(ct_graph_begin(graph, CUDA0, NULL), CT_OK);
    ct_tensor *y = ct_matmul(x, w);
    assert_non_null(y);
    assert_int_equal(ct_graph_end(graph), CT_OK);
    assert_int_equal(gemm_log(NULL, 0), 1);
    for (int round = 1; round <= 3; round++) {
        ct_tensor *x_cpu = ct_randn((int64_t[]){5, 8}, 2, CT_F32, CT_DEVICE_CPU);
        assert_int_equal(ct_copy_(x, x_cpu), CT_OK);
        assert_int_equal(ct_graph_replay(graph), CT_OK);
        ct_tensor *expected = ct_matmul(x_cpu, w_cpu);
        float got[30], want[30];
        assert_int_equal(ct_tensor_to_array(y, got, sizeof got), CT_OK);
        assert_int_equal(ct_tensor_to_array(expected, want, sizeof want), CT_OK);
        for (int i = 0; i < 30; i++) assert_float_equal(got[i], want[i], 1e-5);
    }
    assert_int_equal(gemm_log(NULL, 0), 1);
    ct_graph_free(graph);
    ct_scope_pop();
}

/* The stand-in driver itself: a synchronisation of a capturing stream is refused and invalidates
 * the capture; ending it gives no graph and the stream works again; a valid capture replays. */
static void the_driver_invalidates_a_capture_at_a_synchronisation(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    char reason[256];
    const ct_cuda_driver *cu = ct_cuda_driver_library(reason, sizeof reason, NULL);
    assert_non_null(cu);
    ct_scope_push();
    ct_tensor *src = ct_full((int64_t[]){16}, 1, 3.0, CT_F32, CUDA0);
    ct_tensor *dst = ct_zeros((int64_t[]){16}, 1, CT_F32, CUDA0); /* the context is current now */
    CUdeviceptr s = (CUdeviceptr)(uintptr_t)ct_tensor_handle(src), d = (CUdeviceptr)(uintptr_t)ct_tensor_handle(dst);
    CUstream stream;
    assert_int_equal(cu->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUstreamCaptureStatus status;
    CUgraph graph = NULL;

    assert_int_equal(cu->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemcpyDtoDAsync(d, s, 16 * sizeof(float), stream), CUDA_SUCCESS);
    assert_int_equal(cu->cuStreamSynchronize(stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cu->cuStreamIsCapturing(stream, &status), CUDA_SUCCESS);
    assert_int_equal(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(cu->cuStreamEndCapture(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(graph);
    assert_int_equal(cu->cuStreamIsCapturing(stream, &status), CUDA_SUCCESS);
    assert_int_equal(status, CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(cu->cuStreamSynchronize(stream), CUDA_SUCCESS);
    float values[16];
    assert_int_equal(ct_tensor_to_array(dst, values, sizeof values), CT_OK);
    assert_float_equal(values[0], 0.0f, 0.0f); /* the captured copy never ran */

    assert_int_equal(cu->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    assert_int_equal(cu->cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cu->cuStreamEndCapture(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    assert_int_equal(cu->cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cu->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    assert_int_equal(cu->cuMemcpyDtoDAsync(d, s, 16 * sizeof(float), stream), CUDA_SUCCESS);
    assert_int_equal(cu->cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
    CUgraphExec exec;
    assert_int_equal(cu->cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    assert_int_equal(cu->cuGraphDestroy(graph), CUDA_SUCCESS);
    assert_int_equal(ct_tensor_to_array(dst, values, sizeof values), CT_OK);
    assert_float_equal(values[0], 0.0f, 0.0f);
    assert_int_equal(cu->cuGraphLaunch(exec, stream), CUDA_SUCCESS);
    assert_int_equal(cu->cuStreamSynchronize(stream), CUDA_SUCCESS);
    assert_int_equal(ct_tensor_to_array(dst, values, sizeof values), CT_OK);
    for (int i = 0; i < 16; i++) assert_float_equal(values[i], 3.0f, 0.0f);
    assert_int_equal(cu->cuGraphExecDestroy(exec), CUDA_SUCCESS);
    assert_int_equal(cu->cuStreamDestroy(stream), CUDA_SUCCESS);
    ct_scope_pop();
}

/* ctorch refuses a host sync before the driver sees it; the stream is no longer capturing. */
static void ctorch_refuses_a_host_sync_and_the_stream_works(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    char reason[256];
    const ct_cuda_driver *cu = ct_cuda_driver_library(reason, sizeof reason, NULL);
    ct_scope_push();
    ct_tensor *x = ct_full((int64_t[]){32}, 1, 2.0, CT_F32, CUDA0);
    ct_graph *graph = ct_graph_new();
    assert_int_equal(ct_graph_begin(graph, CUDA0, NULL), CT_OK);
    CUstream captured = (CUstream)ct_current_stream_handle(CUDA0);
    double value;
    assert_int_equal(ct_item(ct_sum(ct_mul_scalar(x, 3.0), NULL, 0, false), &value), CT_ERR_CAPTURE);
    assert_error(CT_ERR_CAPTURE, "ct_tensor_to_array (or ct_item) cannot be captured");
    CUstreamCaptureStatus status;
    assert_int_equal(cu->cuStreamIsCapturing(captured, &status), CUDA_SUCCESS);
    assert_int_equal(status, CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(ct_graph_end(graph), CT_ERR_CAPTURE);
    ct_clear_error();
    assert_int_equal(ct_item(ct_sum(ct_mul_scalar(x, 3.0), NULL, 0, false), &value), CT_OK);
    assert_float_equal(value, 32 * 6.0, 0.0);
    ct_graph_free(graph);
    ct_scope_pop();
}

/* 64 MB of device memory: 100 MB asked during a capture cannot be served, and the cache is not
 * emptied then; the capture is abandoned and the allocator serves again. */
static void an_allocation_the_pool_cannot_serve_abandons_the_capture(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_scope_push();
    ct_graph *graph = ct_graph_new();
    assert_int_equal(ct_graph_begin(graph, CUDA0, NULL), CT_OK);
    assert_null(ct_empty((int64_t[]){25 << 20}, 1, CT_F32, CUDA0));
    assert_error(CT_ERR_CAPTURE, "an allocation of 100");
    assert_int_equal(ct_graph_end(graph), CT_ERR_CAPTURE);
    assert_error(CT_ERR_CAPTURE, "cannot empty the cache");
    ct_graph_free(graph);
    ct_tensor *small = ct_full((int64_t[]){1 << 20}, 1, 1.0, CT_F32, CUDA0);
    double value;
    assert_int_equal(ct_item(ct_sum(small, NULL, 0, false), &value), CT_OK);
    assert_float_equal(value, (double)(1 << 20), 0.0);
    graph = ct_graph_new();
    assert_int_equal(ct_graph_begin(graph, CUDA0, NULL), CT_OK);
    ct_tensor *twice = ct_mul_scalar(small, 2.0);
    assert_int_equal(ct_graph_end(graph), CT_OK);
    assert_int_equal(ct_graph_replay(graph), CT_OK);
    assert_int_equal(ct_item(ct_sum(twice, NULL, 0, false), &value), CT_OK);
    assert_float_equal(value, 2.0 * (1 << 20), 0.0);
    ct_graph_free(graph);
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(replay_equals_eager_as_one_graph_launch),
        cmocka_unit_test(cublas_products_run_inside_the_graph),
        cmocka_unit_test(the_driver_invalidates_a_capture_at_a_synchronisation),
        cmocka_unit_test(ctorch_refuses_a_host_sync_and_the_stream_works),
        cmocka_unit_test(an_allocation_the_pool_cannot_serve_abandons_the_capture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
