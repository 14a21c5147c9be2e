/* The stand-in CUDA driver's streams, events and host functions, called directly (standin_direct.h):
 * work queued on a stream runs in order behind what holds it, the legacy NULL stream waits for
 * blocking streams and not for non-blocking ones, a stream waits for an event of another device,
 * and host functions may not call the driver. Run by ctest with 2 stand-in devices. */
#include <stdatomic.h>
#include <time.h>

#include "standin_direct.h"

/* A host function that holds its stream until the test opens the gate: what is queued behind it
 * cannot have run, whatever the timing. */
static atomic_int gate;
static void hold_until_open(void *arg)
{
    (void)arg;
    while (!atomic_load(&gate)) {
        struct timespec pause = {0, 100000};
        nanosleep(&pause, NULL);
    }
}

static void test_async_copies_from_pinned_memory_wait_for_their_stream(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx0));
    float *pinned_in, *pinned_out;
    CHECK(cu.cuMemHostAlloc((void **)&pinned_in, 256 * sizeof(float), 0));
    CHECK(cu.cuMemHostAlloc((void **)&pinned_out, 256 * sizeof(float), 0));
    for (int i = 0; i < 256; i++) pinned_in[i] = (float)i, pinned_out[i] = -1.0f;
    CUdeviceptr d;
    CHECK(cu.cuMemAlloc(&d, 256 * sizeof(float)));
    CUstream s;
    CUevent done;
    CHECK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cu.cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
    CHECK(cu.cuEventQuery(done)); /* never recorded: complete */
    atomic_store(&gate, 0);
    CHECK(cu.cuLaunchHostFunc(s, hold_until_open, NULL));
    CHECK(cu.cuMemcpyHtoDAsync(d, pinned_in, 256 * sizeof(float), s));
    CHECK(cu.cuMemcpyDtoHAsync(pinned_out, d, 256 * sizeof(float), s));
    CHECK(cu.cuEventRecord(done, s));
    assert_int_equal(cu.cuEventQuery(done), CUDA_ERROR_NOT_READY);
    assert_true(pinned_out[7] == -1.0f); /* queued, not run */
    atomic_store(&gate, 1);
    CHECK(cu.cuEventSynchronize(done));
    CHECK(cu.cuEventQuery(done));
    for (int i = 0; i < 256; i++) assert_true(pinned_out[i] == (float)i);
    /* From pageable memory the source is staged at the call: changing it after is safe. */
    float pageable[4] = {1, 2, 3, 4}, back[4];
    atomic_store(&gate, 0);
    CHECK(cu.cuLaunchHostFunc(s, hold_until_open, NULL));
    CHECK(cu.cuMemcpyHtoDAsync(d, pageable, sizeof pageable, s));
    pageable[0] = 100;
    atomic_store(&gate, 1);
    CHECK(cu.cuMemcpyDtoHAsync(back, d, sizeof back, s)); /* to pageable: returns when done */
    assert_true(back[0] == 1.0f && back[3] == 4.0f);
    CHECK(cu.cuStreamDestroy(s));
    assert_int_equal(cu.cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
    CHECK(cu.cuEventDestroy(done));
    CHECK(cu.cuMemFree(d));
    CHECK(cu.cuMemFreeHost(pinned_in));
    CHECK(cu.cuMemFreeHost(pinned_out));
    assert_int_equal(cu.cuMemFreeHost(pinned_out), CUDA_ERROR_INVALID_VALUE);
}

/* The legacy NULL stream waits for blocking streams, not for non-blocking ones. */
static void test_the_null_stream_is_the_legacy_default_stream(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx0));
    CUstream blocking, non_blocking;
    CUevent e;
    CHECK(cu.cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    CHECK(cu.cuStreamCreate(&non_blocking, CU_STREAM_NON_BLOCKING));
    CHECK(cu.cuEventCreate(&e, 0));

    atomic_store(&gate, 0);
    CHECK(cu.cuLaunchHostFunc(non_blocking, hold_until_open, NULL));
    CHECK(cu.cuEventRecord(e, NULL));
    CHECK(cu.cuEventSynchronize(e)); /* does not wait for the held non-blocking stream */
    CHECK(cu.cuLaunchHostFunc(blocking, hold_until_open, NULL));
    CHECK(cu.cuEventRecord(e, NULL));
    struct timespec pause = {0, 20000000};
    nanosleep(&pause, NULL);
    assert_int_equal(cu.cuEventQuery(e), CUDA_ERROR_NOT_READY); /* waits for the blocking one */
    atomic_store(&gate, 1);
    CHECK(cu.cuEventSynchronize(e));
    CHECK(cu.cuCtxSynchronize());
    CHECK(cu.cuStreamDestroy(blocking));
    CHECK(cu.cuStreamDestroy(non_blocking));
    CHECK(cu.cuEventDestroy(e));
}

static void test_a_stream_waits_for_an_event_of_another_device(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx0));
    CUstream s0, s1;
    CUevent e0;
    CHECK(cu.cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CHECK(cu.cuEventCreate(&e0, CU_EVENT_DISABLE_TIMING));
    CHECK(cu.cuCtxSetCurrent(ctx1));
    CHECK(cu.cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    int *flag;
    CHECK(cu.cuMemHostAlloc((void **)&flag, sizeof *flag, 0));
    *flag = 0;
    CUdeviceptr d1;
    CHECK(cu.cuMemAlloc(&d1, sizeof *flag));
    int one = 1;
    CHECK(cu.cuMemcpyHtoD(d1, &one, sizeof one));

    atomic_store(&gate, 0);
    CHECK(cu.cuLaunchHostFunc(s0, hold_until_open, NULL));
    assert_int_equal(cu.cuEventRecord(e0, s1), CUDA_ERROR_INVALID_HANDLE); /* other context */
    CHECK(cu.cuEventRecord(e0, s0));
    CHECK(cu.cuStreamWaitEvent(s1, e0, 0));
    CHECK(cu.cuMemcpyDtoHAsync(flag, d1, sizeof *flag, s1));
    nanosleep(&(struct timespec){0, 20000000}, NULL);
    assert_int_equal(*flag, 0);
    atomic_store(&gate, 1);
    CHECK(cu.cuStreamSynchronize(s1));
    assert_int_equal(*flag, 1);
    CHECK(cu.cuMemFree(d1));
    CHECK(cu.cuMemFreeHost(flag));
    CHECK(cu.cuStreamDestroy(s1));
    CHECK(cu.cuCtxSetCurrent(ctx0));
    CHECK(cu.cuStreamDestroy(s0));
    CHECK(cu.cuEventDestroy(e0));
}

static CUresult host_function_result;
static void call_the_driver(void *arg)
{
    (void)arg;
    CUdeviceptr p;
    host_function_result = cu.cuMemAlloc(&p, 64);
}

static void test_host_functions_may_not_call_the_driver(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx0));
    host_function_result = CUDA_SUCCESS;
    CHECK(cu.cuLaunchHostFunc(NULL, call_the_driver, NULL));
    CHECK(cu.cuStreamSynchronize(NULL));
    assert_int_equal(host_function_result, CUDA_ERROR_NOT_PERMITTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_async_copies_from_pinned_memory_wait_for_their_stream),
        cmocka_unit_test(test_the_null_stream_is_the_legacy_default_stream),
        cmocka_unit_test(test_a_stream_waits_for_an_event_of_another_device),
        cmocka_unit_test(test_host_functions_may_not_call_the_driver),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
