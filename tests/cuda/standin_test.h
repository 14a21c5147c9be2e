/* What the tests of ctorch's CUDA backend on the stand-in driver share: ctest points ctorch at the
 * stand-ins (CTORCH_CUDA_DRIVER, CTORCH_CUDA_CUBLAS, see standin.cmake) and sets the stand-in's
 * devices per test; these helpers require the backend and read the stand-in's call counts. */
#ifndef CTORCH_STANDIN_TEST_H
#define CTORCH_STANDIN_TEST_H

#include <dlfcn.h>
#include <stdio.h>

#include "test_common.h"

#include "standin.h"

#define CUDA0 ((ct_device){CT_CUDA, 0})
#define CUDA1 ((ct_device){CT_CUDA, 1})

/* Skips (with the reason on stdout) where ctorch was built without the CUDA backend; fails where
 * it was built with it and the stand-in gives fewer than `count` devices. */
#ifdef CTORCH_HAVE_CUDA
#define REQUIRE_CUDA_DEVICES(count)                                                              \
    do {                                                                                         \
        if (ct_device_count(CT_CUDA) < (count))                                                  \
            fail_msg("the stand-in should give %d CUDA device(s), ctorch sees %d: %s", (count),  \
                     ct_device_count(CT_CUDA), ct_backend_unavailable_reason(CT_CUDA));          \
    } while (0)
#else
#define REQUIRE_CUDA_DEVICES(count)                                                              \
    do {                                                                                         \
        printf("skipped: ctorch was built without the CUDA backend (CTORCH_WITH_CUDA)\n");       \
        skip();                                                                                  \
    } while (0)
#endif

/* One of standin.h's functions, from the library ctorch opened (the same file, so the same copy
 * in this process; ctorch keeps it loaded). */
static inline void *standin_function(const char *name)
{
    const char *path = getenv("CTORCH_CUDA_DRIVER");
    if (!path || !path[0]) path = CTORCH_CUDA_STANDIN_DRIVER;
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) fail_msg("dlopen %s: %s", path, dlerror());
    void *function = dlsym(library, name);
    if (!function) fail_msg("%s has no %s", path, name);
    dlclose(library);
    return function;
}

/* One of the stand-in cuBLAS's own functions (its gemm log), from the library ctorch opens (the
 * same file). Kept loaded: ctorch may not have opened it yet, and a dlclose would unload it. */
static inline void *standin_cublas_function(const char *name)
{
    const char *path = getenv("CTORCH_CUDA_CUBLAS");
    if (!path || !path[0]) path = CTORCH_CUDA_STANDIN_CUBLAS;
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) fail_msg("dlopen %s: %s", path, dlerror());
    void *function = dlsym(library, name);
    if (!function) fail_msg("%s has no %s", path, name);
    return function;
}

/* The stand-in driver's call counts. */
static inline ctorch_standin_counts standin_counts(void)
{
    ctorch_standin_get_counts_fn get = (ctorch_standin_get_counts_fn)standin_function("ctorch_standin_get_counts");
    ctorch_standin_counts counts;
    get(&counts);
    return counts;
}

/* The values of a float tensor of any device. */
static inline void read_floats(const ct_tensor *t, float *out, size_t count)
{
    assert_int_equal(ct_tensor_to_array(t, out, count * sizeof *out), CT_OK);
}

#endif
