/* What the OpenCL backend tests share: skipping where there is no OpenCL device, finding two
 * devices in one context or in two, and reading tensors back for comparison.
 *
 * The suite's environment gives two PoCL devices in one context (POCL_DEVICES="pthread
 * pthread"). A GPU machine adds its driver's platform (an NVIDIA GPU as opencl:0 there), whose
 * devices share no context with PoCL's: a test that needs one context finds a pair that has one,
 * or says why it skips. To see such a machine here, give the ICD loader a second platform:
 * Oclgrind's simulated GPU (Debian's oclgrind package; no vendors file names its driver):
 *     mkdir /tmp/two-platforms && echo libpocl.so.2 >/tmp/two-platforms/pocl.icd &&
 *     echo /usr/lib/oclgrind/liboclgrind-rt-icd.so >/tmp/two-platforms/oclgrind.icd
 *     OCL_ICD_VENDORS=/tmp/two-platforms ctest -R 'test_opencl_(tensors|streams)|data_parallel_dev'
 * Then opencl:0 is Oclgrind's (a GPU, first) and opencl:1 and 2 are PoCL's, as on a GPU machine.
 * Only for a look: the simulator takes minutes over the streams suite, Oclgrind 21.10 cannot
 * build abs_i32 (no llvm.abs), and a process with Oclgrind's device and one PoCL device
 * (CTORCH_OPENCL_VISIBLE_DEVICES=0,1) was seen to corrupt its heap, found at exit. PoCL itself
 * gives no second platform: named twice, it is one platform listed twice; a copy of libpocl under
 * another name aborts as it registers its LLVM options a second time. */
#ifndef CT_TEST_OPENCL_TEST_H
#define CT_TEST_OPENCL_TEST_H

#include <stdio.h>

#include "test_common.h"

#ifdef CTORCH_HAVE_OPENCL
#include "backend/opencl/opencl_backend.h"
#endif

static const ct_device OPENCL0 = {CT_OPENCL, 0}, OPENCL1 = {CT_OPENCL, 1};

/* Skips the calling test unless at least `count` OpenCL devices are there. */
#define REQUIRE_OPENCL_DEVICES(count)                                                            \
    do {                                                                                         \
        if (ct_device_count(CT_OPENCL) < (count)) {                                              \
            print_message("needs %d OpenCL device(s), found %d (%s): skipped\n", (count),        \
                          ct_device_count(CT_OPENCL), ct_backend_unavailable_reason(CT_OPENCL)); \
            skip();                                                                              \
        }                                                                                        \
    } while (0)

/* Finds two visible OpenCL devices, lowest indices first, that share one context (same_context)
 * or that do not; false when there are none such. One platform's devices share a context: only
 * they copy between each other directly (the backend's copy_peer), other pairs stage the bytes
 * on the host. */
static inline bool opencl_device_pair(bool same_context, int *first, int *second)
{
#ifdef CTORCH_HAVE_OPENCL
    int count = ct_device_count(CT_OPENCL);
    for (int a = 0; a < count; a++)
        for (int b = a + 1; b < count; b++)
            if (ct_opencl_share_context(a, b) == same_context) {
                *first = a;
                *second = b;
                return true;
            }
#else
    (void)same_context, (void)first, (void)second;
#endif
    return false;
}

/* Sets first and second to two OpenCL devices in one context, or skips the calling test. */
#define REQUIRE_OPENCL_DEVICES_IN_ONE_CONTEXT(first, second)                                     \
    do {                                                                                         \
        REQUIRE_OPENCL_DEVICES(2);                                                               \
        if (!opencl_device_pair(true, &(first), &(second))) {                                    \
            print_message("needs two OpenCL devices in one context (of one platform); no two "  \
                          "of the %d here share one: skipped\n", ct_device_count(CT_OPENCL));   \
            skip();                                                                              \
        }                                                                                        \
    } while (0)

/* Sets first and second to two OpenCL devices in two contexts, or skips the calling test. */
#define REQUIRE_OPENCL_DEVICES_IN_TWO_CONTEXTS(first, second)                                    \
    do {                                                                                         \
        REQUIRE_OPENCL_DEVICES(2);                                                               \
        if (!opencl_device_pair(false, &(first), &(second))) {                                   \
            print_message("needs OpenCL devices of two platforms (a GPU's and PoCL's); the %d "  \
                          "here share one context: skipped\n", ct_device_count(CT_OPENCL));     \
            skip();                                                                              \
        }                                                                                        \
    } while (0)

/* The values of t as doubles (malloc'ed; numel of them). */
static inline double *values_of(const ct_tensor *t)
{
    ct_tensor *as_double = ct_to_dtype(t, CT_F64);
    ct_tensor *home = ct_to(as_double, CT_DEVICE_CPU);
    assert_non_null(home);
    size_t n = (size_t)ct_numel(t);
    double *values = malloc((n ? n : 1) * sizeof *values);
    assert_int_equal(ct_tensor_to_array(home, values, n * sizeof *values), CT_OK);
    ct_release(home);
    ct_release(as_double);
    return values;
}

/* The two tensors have one shape and dtype, and their values agree within rel * |expected| +
 * abs (exactly for rel = abs = 0); NaNs must sit at the same places. */
static inline void assert_same_values(const ct_tensor *actual, const ct_tensor *expected,
                                      double rel, double abs_tolerance, const char *what)
{
    assert_non_null(actual);
    assert_non_null(expected);
    assert_int_equal(ct_tensor_dtype(actual), ct_tensor_dtype(expected));
    assert_int_equal(ct_tensor_ndim(actual), ct_tensor_ndim(expected));
    for (int d = 0; d < ct_tensor_ndim(actual); d++)
        assert_int_equal(ct_tensor_size(actual, d), ct_tensor_size(expected, d));
    double *a = values_of(actual), *e = values_of(expected);
    for (int64_t i = 0; i < ct_numel(actual); i++) {
        bool both_nan = a[i] != a[i] && e[i] != e[i];
        double diff = a[i] > e[i] ? a[i] - e[i] : e[i] - a[i];
        double bound = rel * (e[i] < 0 ? -e[i] : e[i]) + abs_tolerance;
        if (!both_nan && !(a[i] == e[i] || diff <= bound))
            fail_msg("%s: element %lld is %.17g, expected %.17g", what, (long long)i, a[i], e[i]);
    }
    free(a);
    free(e);
}

#endif
