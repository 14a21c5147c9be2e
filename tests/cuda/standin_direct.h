/* The stand-in CUDA driver opened as ctorch opens it (dlopen, then every function of
 * cuda_libraries.h's list by its symbol name), for the tests that call it directly
 * (test_standin_driver, test_standin_blocks). */
#ifndef CTORCH_STANDIN_DIRECT_H
#define CTORCH_STANDIN_DIRECT_H

#include <dlfcn.h>
#include <stdio.h>

#include "test_common.h"

#include "backend/cuda/cuda_libraries.h"
#include "standin.h"

static ct_cuda_driver cu;
static ctorch_standin_get_counts_fn get_counts;
static ctorch_standin_launch_log_fn launch_log;
static ctorch_standin_launch_log_clear_fn launch_log_clear;
static ctorch_standin_run_blocks_for_testing_fn run_blocks;
static ctorch_standin_launch_blocks_for_testing_fn launch_blocks;
/* A body's ids and barrier, as a kernel's CT_GROUP_ID, CT_LOCAL_ID, CT_GROUP_SIZE, CT_BARRIER(). */
static ctorch_standin_id_fn group_id, local_id, group_size;
static ctorch_standin_barrier_fn barrier;

#define CHECK(call) assert_int_equal((call), CUDA_SUCCESS)

static inline const char *driver_path(void)
{
    const char *path = getenv("CTORCH_CUDA_DRIVER");
    return path && path[0] ? path : CTORCH_CUDA_STANDIN_DRIVER;
}

#define LOOK_UP(f)                                                                               \
    cu.f = (__typeof__(cu.f))dlsym(library, CT_CUDA_SYMBOL(f));                                  \
    if (!cu.f) fail_msg("the stand-in has no %s", CT_CUDA_SYMBOL(f));

/* Every function of the contract, as ctorch looks them up. */
static inline void open_driver(void)
{
    void *library = dlopen(driver_path(), RTLD_NOW | RTLD_LOCAL);
    if (!library) fail_msg("dlopen %s: %s", driver_path(), dlerror());
    CT_CUDA_DRIVER_FUNCTIONS(LOOK_UP)
    get_counts = (ctorch_standin_get_counts_fn)dlsym(library, "ctorch_standin_get_counts");
    launch_log = (ctorch_standin_launch_log_fn)dlsym(library, "ctorch_standin_launch_log");
    launch_log_clear = (ctorch_standin_launch_log_clear_fn)dlsym(library, "ctorch_standin_launch_log_clear");
    run_blocks = (ctorch_standin_run_blocks_for_testing_fn)dlsym(library, "ctorch_standin_run_blocks_for_testing");
    launch_blocks =
        (ctorch_standin_launch_blocks_for_testing_fn)dlsym(library, "ctorch_standin_launch_blocks_for_testing");
    group_id = (ctorch_standin_id_fn)dlsym(library, "ctorch_standin_group_id");
    local_id = (ctorch_standin_id_fn)dlsym(library, "ctorch_standin_local_id");
    group_size = (ctorch_standin_id_fn)dlsym(library, "ctorch_standin_group_size");
    barrier = (ctorch_standin_barrier_fn)dlsym(library, "ctorch_standin_barrier");
    assert_non_null(get_counts);
    assert_non_null(launch_log);
    assert_non_null(launch_log_clear);
    assert_non_null(run_blocks);
    assert_non_null(launch_blocks);
    assert_non_null(group_id);
    assert_non_null(local_id);
    assert_non_null(group_size);
    assert_non_null(barrier);
}

static CUcontext ctx0, ctx1;

static inline int setup(void **state)
{
    (void)state;
    open_driver();
    int version = 0;
    CHECK(cu.cuDriverGetVersion(&version));
    assert_int_equal(version, CUDA_VERSION);
    int count = -1;
    assert_int_equal(cu.cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
    assert_int_equal(cu.cuInit(1), CUDA_ERROR_INVALID_VALUE);
    CHECK(cu.cuInit(0));
    CHECK(cu.cuDevicePrimaryCtxRetain(&ctx0, 0));
    CHECK(cu.cuDevicePrimaryCtxRetain(&ctx1, 1));
    return 0;
}


#endif
