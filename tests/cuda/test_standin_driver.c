/* The stand-in CUDA driver on its own (its blocks: test_standin_blocks.c), opened as ctorch opens
 * it (standin_direct.h) and called directly: devices, contexts, memory and copies, modules and
 * kernels (its streams and events: test_standin_streams_and_events.c). Run by ctest with 2 stand-in
 * devices; the runs with another environment give the scenario as the first argument:
 *   (none)       2 devices of 512 MiB
 *   no-device    CTORCH_CUDA_STANDIN_DEVICES=0: cuInit says CUDA_ERROR_NO_DEVICE
 *   hidden       CUDA_VISIBLE_DEVICES="" (none visible): the same
 *   visible      3 devices of 512, 256 and 128 MiB, CUDA_VISIBLE_DEVICES=2,0,x,1: devices 2 and 0
 *                in that order (an entry that is no device ends the list)
 *   h100         CTORCH_CUDA_STANDIN_PROFILE=h100: 2 devices that present an H100's figures */
#include <pthread.h>

#include "kernels/kernel_params.h"
#include "standin_direct.h"

/* ---- devices ---- */

static void test_devices_count_name_capability_memory(void **state)
{
    (void)state;
    int count = 0;
    CHECK(cu.cuDeviceGetCount(&count));
    assert_int_equal(count, 2);
    CUdevice dev;
    CHECK(cu.cuDeviceGet(&dev, 1));
    assert_int_equal(dev, 1);
    assert_int_equal(cu.cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
    char name[64];
    CHECK(cu.cuDeviceGetName(name, sizeof name, 0));
    assert_string_equal(name, "ctorch stand-in GPU");
    char short_name[6];
    CHECK(cu.cuDeviceGetName(short_name, sizeof short_name, 0));
    assert_string_equal(short_name, "ctorc");
    int major = 0, minor = -1, sms = 0;
    CHECK(cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    CHECK(cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
    CHECK(cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    assert_int_equal(major, 8);
    assert_int_equal(minor, 0);
    assert_true(sms > 0);
    assert_int_equal(cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 5),
                     CUDA_ERROR_INVALID_DEVICE);
    size_t total = 0;
    CHECK(cu.cuDeviceTotalMem(&total, 1));
    assert_int_equal(total, (size_t)512 << 20);
    int can = -1;
    CHECK(cu.cuDeviceCanAccessPeer(&can, 0, 1));
    assert_int_equal(can, 1);
    CHECK(cu.cuDeviceCanAccessPeer(&can, 0, 0));
    assert_int_equal(can, 0);
}

static void test_error_names_and_texts_are_the_drivers(void **state)
{
    (void)state;
    const char *name = NULL, *text = NULL;
    CHECK(cu.cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &name));
    CHECK(cu.cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text));
    assert_string_equal(name, "CUDA_ERROR_OUT_OF_MEMORY");
    assert_string_equal(text, "out of memory");
    CHECK(cu.cuGetErrorName(CUDA_ERROR_INVALID_DEVICE, &name));
    CHECK(cu.cuGetErrorString(CUDA_ERROR_INVALID_DEVICE, &text));
    assert_string_equal(name, "CUDA_ERROR_INVALID_DEVICE");
    assert_string_equal(text, "invalid device ordinal");
    CHECK(cu.cuGetErrorName(CUDA_ERROR_INVALID_CONTEXT, &name));
    assert_string_equal(name, "CUDA_ERROR_INVALID_CONTEXT");
    CHECK(cu.cuGetErrorString(CUDA_ERROR_NO_DEVICE, &text));
    assert_string_equal(text, "no CUDA-capable device is detected");
    CHECK(cu.cuGetErrorName(CUDA_SUCCESS, &name));
    assert_string_equal(name, "CUDA_SUCCESS");
    assert_int_equal(cu.cuGetErrorName((CUresult)12345, &name), CUDA_ERROR_INVALID_VALUE);
    assert_null(name);
}

/* ---- contexts ---- */

static void *allocate_without_context(void *arg)
{
    CUdeviceptr *p = arg;
    CUresult r = cu.cuMemAlloc(p, 64);
    return (void *)(intptr_t)r;
}

static void *allocate_with_context(void *arg)
{
    CUdeviceptr *p = arg;
    CUresult r = cu.cuCtxSetCurrent(ctx0);
    if (r == CUDA_SUCCESS) r = cu.cuMemAlloc(p, 64);
    if (r == CUDA_SUCCESS) r = cu.cuMemFree(*p);
    return (void *)(intptr_t)r;
}

static void test_calls_need_the_context_current_on_each_thread(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(NULL));
    CUcontext now = ctx0;
    CHECK(cu.cuCtxGetCurrent(&now));
    assert_null(now);
    CUdeviceptr p = 0;
    assert_int_equal(cu.cuMemAlloc(&p, 64), CUDA_ERROR_INVALID_CONTEXT);
    size_t free_bytes, total;
    assert_int_equal(cu.cuMemGetInfo(&free_bytes, &total), CUDA_ERROR_INVALID_CONTEXT);
    CUstream s;
    assert_int_equal(cu.cuStreamCreate(&s, 0), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cu.cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);

    CHECK(cu.cuCtxSetCurrent(ctx0));
    CHECK(cu.cuCtxGetCurrent(&now));
    assert_ptr_equal(now, ctx0);
    /* Another thread has no current context until it sets one. */
    pthread_t thread;
    void *result;
    pthread_create(&thread, NULL, allocate_without_context, &p);
    pthread_join(thread, &result);
    assert_int_equal((CUresult)(intptr_t)result, CUDA_ERROR_INVALID_CONTEXT);
    pthread_create(&thread, NULL, allocate_with_context, &p);
    pthread_join(thread, &result);
    assert_int_equal((CUresult)(intptr_t)result, CUDA_SUCCESS);
    /* The primary context is one per device, counted. */
    CUcontext again;
    CHECK(cu.cuDevicePrimaryCtxRetain(&again, 0));
    assert_ptr_equal(again, ctx0);
    CHECK(cu.cuDevicePrimaryCtxRelease(0));
}

static void test_releasing_the_last_reference_destroys_the_context(void **state)
{
    (void)state;
    CUcontext ctx;
    CHECK(cu.cuDevicePrimaryCtxRetain(&ctx, 1));
    CHECK(cu.cuCtxSetCurrent(ctx));
    CUdeviceptr p;
    CHECK(cu.cuMemAlloc(&p, 1 << 20));
    CHECK(cu.cuDevicePrimaryCtxRelease(1));
    CHECK(cu.cuDevicePrimaryCtxRelease(1)); /* setup's reference: the last one */
    assert_int_equal(cu.cuMemAlloc(&p, 64), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cu.cuDevicePrimaryCtxRelease(1), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cu.cuCtxSetCurrent(ctx), CUDA_ERROR_INVALID_CONTEXT);
    /* Retained again: a fresh context, all its memory free. */
    CHECK(cu.cuDevicePrimaryCtxRetain(&ctx1, 1));
    CHECK(cu.cuCtxSetCurrent(ctx1));
    size_t free_bytes, total;
    CHECK(cu.cuMemGetInfo(&free_bytes, &total));
    assert_int_equal(free_bytes, total);
    CHECK(cu.cuCtxSetCurrent(ctx0));
}

/* ---- memory and copies ---- */

static void test_memory_is_limited_and_device_pointers_are_not_host_pointers(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx0));
    size_t free_before, total;
    CHECK(cu.cuMemGetInfo(&free_before, &total));
    assert_int_equal(total, (size_t)512 << 20);
    CUdeviceptr p;
    assert_int_equal(cu.cuMemAlloc(&p, total + 1), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(cu.cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK(cu.cuMemAlloc(&p, 100 << 20));
    size_t free_after;
    CHECK(cu.cuMemGetInfo(&free_after, &total));
    assert_int_equal(free_before - free_after, (size_t)100 << 20);
    CUdeviceptr q;
    assert_int_equal(cu.cuMemAlloc(&q, free_after + 1), CUDA_ERROR_OUT_OF_MEMORY);
    /* Not an address the host may read: the top bit is set. */
    assert_true(p >> 63);
    assert_int_equal(p % 256, 0);
    CHECK(cu.cuMemFree(p));
    assert_int_equal(cu.cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
    CHECK(cu.cuMemGetInfo(&free_after, &total));
    assert_int_equal(free_after, free_before);
}

static void test_copies_round_trip_and_are_checked_against_the_allocation(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx0));
    float in[64], out[64];
    for (int i = 0; i < 64; i++) in[i] = (float)i;
    CUdeviceptr a, b;
    CHECK(cu.cuMemAlloc(&a, sizeof in));
    CHECK(cu.cuMemAlloc(&b, sizeof in));
    CHECK(cu.cuMemcpyHtoD(a, in, sizeof in));
    CHECK(cu.cuMemcpyDtoD(b + 16 * sizeof(float), a, 48 * sizeof(float)));
    CHECK(cu.cuMemcpyDtoD(b, a + 48 * sizeof(float), 16 * sizeof(float)));
    CHECK(cu.cuMemcpyDtoH(out, b, sizeof out));
    for (int i = 0; i < 64; i++) assert_true(out[i] == (float)((i + 48) % 64));
    /* Past the end, or a host pointer where device memory belongs: invalid. */
    assert_int_equal(cu.cuMemcpyHtoD(a + 4, in, sizeof in), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cu.cuMemcpyDtoH(out, (CUdeviceptr)(uintptr_t)in, 4), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cu.cuMemcpyHtoD(a, (const void *)(uintptr_t)b, 4), CUDA_ERROR_INVALID_VALUE);
    /* Between devices. */
    CUdeviceptr c;
    CHECK(cu.cuCtxSetCurrent(ctx1));
    CHECK(cu.cuMemAlloc(&c, sizeof in));
    CHECK(cu.cuMemcpyPeer(c, ctx1, a, ctx0, sizeof in));
    memset(out, 0, sizeof out);
    CHECK(cu.cuMemcpyDtoH(out, c, sizeof out));
    assert_memory_equal(out, in, sizeof in);
    assert_int_equal(cu.cuMemcpyPeer(c, ctx0, a, ctx0, sizeof in), CUDA_ERROR_INVALID_VALUE);
    CHECK(cu.cuMemFree(c));
    CHECK(cu.cuCtxSetCurrent(ctx0));
    CHECK(cu.cuMemFree(a));
    CHECK(cu.cuMemFree(b));
}

/* ---- modules and kernels ---- */

/* The shape of NVRTC's output, with two of the kernels' entries (and one no C kernel has). */
static const char ptx[] =
    "//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 9.0\n.target sm_80\n"
    ".address_size 64\n\n"
    "\t// .globl\tfill_f32\n"
    ".visible .entry fill_f32(\n\t.param .u64 fill_f32_param_0,\n\t.param .u64 p1,\n"
    "\t.param .u64 p2,\n\t.param .u64 p3,\n\t.param .align 8 .b8 p4[432]\n)\n{\n\tret;\n}\n"
    ".visible .entry arange_f64(\n)\n{\n\tret;\n}\n"
    ".visible .entry no_such_kernel(\n)\n{\n\tret;\n}\n";

static CUresult launch_fill(CUfunction f, unsigned grid, unsigned block, CUdeviceptr out, long n,
                            double value)
{
    CUdeviceptr none = 0;
    ct_kparams p = {.n = n, .ndim = 1, .size = {n}, .s = {value}};
    void *args[] = {&out, &none, &none, &none, &p};
    return cu.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, NULL, args, NULL);
}

static void test_modules_load_ptx_and_map_entries_to_the_c_kernels(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx0));
    CUmodule m;
    assert_int_equal(cu.cuModuleLoadData(&m, "this is not PTX"), CUDA_ERROR_INVALID_IMAGE);
    char sm90[sizeof ptx];
    memcpy(sm90, ptx, sizeof ptx);
    memcpy(strstr(sm90, "sm_80"), "sm_90", 5);
    assert_int_equal(cu.cuModuleLoadData(&m, sm90), CUDA_ERROR_INVALID_PTX);
    CHECK(cu.cuModuleLoadData(&m, ptx));
    CUfunction fill, again, other;
    CHECK(cu.cuModuleGetFunction(&fill, m, "fill_f32"));
    CHECK(cu.cuModuleGetFunction(&again, m, "fill_f32"));
    assert_ptr_equal(fill, again);
    CHECK(cu.cuModuleGetFunction(&other, m, "arange_f64"));
    assert_int_equal(cu.cuModuleGetFunction(&other, m, "add_f32"), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(cu.cuModuleGetFunction(&other, m, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);

    /* A grid of 3 blocks of 128 covers 384 items: the kernel stops itself at n = 300. */
    enum { n = 300, capacity = 400 };
    CUdeviceptr out;
    CHECK(cu.cuMemAlloc(&out, capacity * sizeof(float)));
    CHECK(launch_fill(fill, 3, 128, out, n, 2.5));
    float host[capacity];
    CHECK(cu.cuMemcpyDtoH(host, out, sizeof host));
    for (int i = 0; i < n; i++) assert_true(host[i] == 2.5f);
    assert_true(host[n] != host[n]); /* untouched: fresh memory is NaN */
    /* A grid that covers too few items computes too few, as on a GPU. */
    CHECK(launch_fill(fill, 2, 128, out, n, 7.0));
    CHECK(cu.cuMemcpyDtoH(host, out, sizeof host));
    assert_true(host[255] == 7.0f);
    assert_true(host[256] == 2.5f);
    /* What a GPU refuses. */
    assert_int_equal(launch_fill(fill, 1, 2048, out, n, 1.0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(launch_fill(fill, 0, 128, out, n, 1.0), CUDA_ERROR_INVALID_VALUE);
    float on_the_host[4];
    assert_int_equal(launch_fill(fill, 1, 4, (CUdeviceptr)(uintptr_t)on_the_host, 4, 1.0),
                     CUDA_ERROR_INVALID_VALUE);
    CHECK(cu.cuCtxSetCurrent(ctx1));
    assert_int_equal(launch_fill(fill, 1, 4, out, 4, 1.0), CUDA_ERROR_INVALID_HANDLE);
    CHECK(cu.cuCtxSetCurrent(NULL));
    assert_int_equal(launch_fill(fill, 1, 4, out, 4, 1.0), CUDA_ERROR_INVALID_CONTEXT);
    CHECK(cu.cuCtxSetCurrent(ctx0));
    CHECK(cu.cuMemFree(out));
    CHECK(cu.cuModuleUnload(m));
    assert_int_equal(cu.cuModuleGetFunction(&other, m, "fill_f32"), CUDA_ERROR_INVALID_HANDLE);
}

static void test_the_calls_are_counted(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx0));
    ctorch_standin_counts before, after;
    get_counts(&before);
    CUdeviceptr p;
    CHECK(cu.cuMemAlloc(&p, 64));
    CHECK(cu.cuMemFree(p));
    get_counts(&after);
    assert_int_equal(after.mem_alloc, before.mem_alloc + 1);
    assert_int_equal(after.mem_free, before.mem_free + 1);
}


/* ---- the launch log ---- */

static CUresult launch_fill_shared(CUfunction f, unsigned grid, unsigned block, unsigned shared,
                                   CUdeviceptr out, long n)
{
    CUdeviceptr none = 0;
    ct_kparams p = {.n = n, .ndim = 1, .size = {n}, .s = {1.0}};
    void *args[] = {&out, &none, &none, &none, &p};
    return cu.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, shared, NULL, args, NULL);
}

static void test_the_launch_log_records_every_launch(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx1));
    CUmodule m;
    CHECK(cu.cuModuleLoadData(&m, ptx));
    CUfunction fill, arange;
    CHECK(cu.cuModuleGetFunction(&fill, m, "fill_f32"));
    CHECK(cu.cuModuleGetFunction(&arange, m, "arange_f64"));
    CUdeviceptr out;
    CHECK(cu.cuMemAlloc(&out, 1024 * sizeof(double)));

    launch_log_clear();
    ctorch_standin_launch log[8];
    assert_int_equal(launch_log(log, 8), 0);
    CHECK(launch_fill_shared(fill, 3, 128, 0, out, 300));
    CHECK(launch_fill_shared(arange, 1, 32, 4096, out, 32));
    /* What a GPU refuses is not launched, nor logged. */
    assert_int_equal(launch_fill_shared(fill, 1, 2048, 0, out, 300), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(launch_fill_shared(fill, 1, 32, 49153, out, 32), CUDA_ERROR_INVALID_VALUE);
    CHECK(launch_fill_shared(fill, 2, 64, 49152, out, 100));
    assert_int_equal(launch_log(log, 8), 3);
    assert_string_equal(log[0].kernel, "fill_f32");
    assert_int_equal(log[0].device, 1);
    assert_int_equal(log[0].grid_x, 3);
    assert_int_equal(log[0].block_x, 128);
    assert_int_equal(log[0].shared_bytes, 0);
    assert_int_equal(log[0].number, 0);
    assert_string_equal(log[1].kernel, "arange_f64");
    assert_int_equal(log[1].grid_x, 1);
    assert_int_equal(log[1].block_x, 32);
    assert_int_equal(log[1].shared_bytes, 4096);
    assert_int_equal(log[1].number, 1);
    assert_string_equal(log[2].kernel, "fill_f32");
    assert_int_equal(log[2].grid_x, 2);
    assert_int_equal(log[2].block_x, 64);
    assert_int_equal(log[2].shared_bytes, 49152);
    assert_int_equal(log[2].number, 2);
    /* A smaller array takes the oldest; the count is still all of them. */
    ctorch_standin_launch first;
    assert_int_equal(launch_log(&first, 1), 3);
    assert_string_equal(first.kernel, "fill_f32");
    assert_int_equal(first.grid_x, 3);

    /* Past its capacity, the log keeps the latest. */
    launch_log_clear();
    enum { extra = 10 };
    for (unsigned i = 0; i < CTORCH_STANDIN_LAUNCH_LOG_CAPACITY + extra; i++)
        CHECK(launch_fill_shared(fill, 1 + i % 7, 1, 0, out, 1));
    static ctorch_standin_launch all[CTORCH_STANDIN_LAUNCH_LOG_CAPACITY];
    assert_int_equal(launch_log(all, CTORCH_STANDIN_LAUNCH_LOG_CAPACITY), CTORCH_STANDIN_LAUNCH_LOG_CAPACITY);
    for (unsigned i = 0; i < CTORCH_STANDIN_LAUNCH_LOG_CAPACITY; i++) {
        assert_int_equal(all[i].number, i + extra);
        assert_int_equal(all[i].grid_x, 1 + (i + extra) % 7);
    }
    launch_log_clear();
    assert_int_equal(launch_log(all, 1), 0);
    CHECK(cu.cuCtxSynchronize());
    CHECK(cu.cuMemFree(out));
    CHECK(cu.cuModuleUnload(m));
}


static void expect_no_device(void)
{
    open_driver();
    assert_int_equal(cu.cuInit(0), CUDA_ERROR_NO_DEVICE);
    assert_int_equal(cu.cuInit(0), CUDA_ERROR_NO_DEVICE);
    int count = -1;
    assert_int_equal(cu.cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
}

static void test_no_device(void **state)
{
    (void)state;
    expect_no_device();
}

static void test_visible_devices_in_their_order_until_an_unknown_entry(void **state)
{
    (void)state;
    open_driver();
    CHECK(cu.cuInit(0));
    int count = 0;
    CHECK(cu.cuDeviceGetCount(&count));
    assert_int_equal(count, 2);
    size_t total;
    CHECK(cu.cuDeviceTotalMem(&total, 0));
    assert_int_equal(total, (size_t)128 << 20); /* physical device 2 */
    CHECK(cu.cuDeviceTotalMem(&total, 1));
    assert_int_equal(total, (size_t)512 << 20); /* physical device 0 */
    int bus0, bus1;
    CHECK(cu.cuDeviceGetAttribute(&bus0, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0));
    CHECK(cu.cuDeviceGetAttribute(&bus1, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1));
    assert_int_equal(bus0 - bus1, 2);
}


/* CTORCH_CUDA_STANDIN_PROFILE=h100: every device presents an H100 SXM5 80GB HBM3's figures, and
 * takes PTX up to sm_90. */
static void test_the_h100_profile_presents_an_h100(void **state)
{
    (void)state;
    open_driver();
    CHECK(cu.cuInit(0));
    int count = 0;
    CHECK(cu.cuDeviceGetCount(&count));
    assert_int_equal(count, 2);
    for (CUdevice dev = 0; dev < count; dev++) {
        char name[128];
        CHECK(cu.cuDeviceGetName(name, sizeof name, dev));
        assert_string_equal(name, "NVIDIA H100 80GB HBM3 (stand-in)");
        const struct {
            CUdevice_attribute attribute;
            int value;
        } expected[] = {
            {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
            {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
            {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
            {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
            {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
            {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472},
            {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
            {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
            {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
            {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
            {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
            {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 50 << 20},
        };
        for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
            int value = -1;
            CHECK(cu.cuDeviceGetAttribute(&value, expected[i].attribute, dev));
            if (value != expected[i].value)
                fail_msg("attribute %d of device %d: %d, not %d", (int)expected[i].attribute, dev,
                         value, expected[i].value);
        }
        size_t total = 0;
        CHECK(cu.cuDeviceTotalMem(&total, dev));
        assert_int_equal(total, (size_t)512 << 20); /* CTORCH_CUDA_STANDIN_MEMORY_MB's */
    }
    /* PTX for sm_90 loads, and runs; for a later device it does not. */
    CUcontext ctx;
    CHECK(cu.cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cu.cuCtxSetCurrent(ctx));
    char sm90[sizeof ptx], sm100[sizeof ptx + 1];
    memcpy(sm90, ptx, sizeof ptx);
    memcpy(strstr(sm90, "sm_80"), "sm_90", 5);
    snprintf(sm100, sizeof sm100, "%.*ssm_100%s", (int)(strstr(ptx, "sm_80") - ptx), ptx,
             strstr(ptx, "sm_80") + 5);
    CUmodule m;
    assert_int_equal(cu.cuModuleLoadData(&m, sm100), CUDA_ERROR_INVALID_PTX);
    CHECK(cu.cuModuleLoadData(&m, sm90));
    CUfunction fill;
    CHECK(cu.cuModuleGetFunction(&fill, m, "fill_f32"));
    CUdeviceptr out;
    CHECK(cu.cuMemAlloc(&out, 132 * 256 * sizeof(float)));
    launch_log_clear();
    CHECK(launch_fill_shared(fill, 132, 256, 0, out, 132 * 256));
    ctorch_standin_launch launch;
    assert_int_equal(launch_log(&launch, 1), 1);
    assert_int_equal(launch.grid_x, 132);
    float last = 0;
    CHECK(cu.cuMemcpyDtoH(&last, out + (132 * 256 - 1) * sizeof(float), sizeof last));
    assert_true(last == 1.0f);
    CHECK(cu.cuMemFree(out));
    CHECK(cu.cuModuleUnload(m));
    CHECK(cu.cuDevicePrimaryCtxRelease(0));
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "";
    if (strcmp(scenario, "no-device") == 0 || strcmp(scenario, "hidden") == 0) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_device)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    if (strcmp(scenario, "h100") == 0) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_the_h100_profile_presents_an_h100)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    if (strcmp(scenario, "visible") == 0) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_visible_devices_in_their_order_until_an_unknown_entry)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_devices_count_name_capability_memory),
        cmocka_unit_test(test_error_names_and_texts_are_the_drivers),
        cmocka_unit_test(test_calls_need_the_context_current_on_each_thread),
        cmocka_unit_test(test_releasing_the_last_reference_destroys_the_context),
        cmocka_unit_test(test_memory_is_limited_and_device_pointers_are_not_host_pointers),
        cmocka_unit_test(test_copies_round_trip_and_are_checked_against_the_allocation),
        cmocka_unit_test(test_modules_load_ptx_and_map_entries_to_the_c_kernels),
        cmocka_unit_test(test_the_calls_are_counted),
        cmocka_unit_test(test_the_launch_log_records_every_launch),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
