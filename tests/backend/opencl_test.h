/* What the OpenCL backend tests share: skipping where there is no OpenCL device, and reading
 * tensors back for comparison. */
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
