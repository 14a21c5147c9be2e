/* Helpers of the nn and optim tests: tensors from and to C arrays of doubles, and the devices
 * to run on. */
#ifndef CT_TEST_NN_TEST_H
#define CT_TEST_NN_TEST_H

#include <math.h>

#include "test_common.h"

#define OPENCL0 ((ct_device){CT_OPENCL, 0})

/* A tensor of dtype on device holding values (given as doubles). */
static inline ct_tensor *tensor_of(const double *values, const int64_t *shape, int ndim, ct_dtype dtype,
                                   ct_device device)
{
    ct_tensor *d = ct_tensor_from_data(values, CT_F64, shape, ndim, CT_DEVICE_CPU);
    ct_tensor *c = ct_to_dtype(d, dtype);
    ct_tensor *out = ct_to(c, device);
    ct_release(d);
    ct_release(c);
    assert_non_null(out);
    return out;
}

/* t's values as doubles into out (n of them). */
static inline void values_of(const ct_tensor *t, double *out, int64_t n)
{
    assert_int_equal(ct_numel(t), n);
    ct_tensor *d = ct_to_dtype(t, CT_F64);
    ct_tensor *c = ct_to(d, CT_DEVICE_CPU);
    assert_int_equal(ct_tensor_to_array(c, out, (size_t)n * sizeof(double)), CT_OK);
    ct_release(d);
    ct_release(c);
}

static inline double value_of(const ct_tensor *t)
{
    double v = 0;
    assert_non_null(t);
    assert_int_equal(ct_item(t, &v), CT_OK);
    return v;
}

static inline void assert_close_array(const double *got, const double *want, int64_t n, double rtol,
                                      double atol, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= atol + rtol * fabs(want[i])))
            fail_msg("%s[%lld]: got %.9g, want %.9g", what, (long long)i, got[i], want[i]);
}

/* The values of a module's parameter or buffer by dotted name. */
static inline void values_by_module(const ct_module *m, const char *name, double *out, int64_t n)
{
    ct_tensor *t = ct_module_parameter(m, name);
    if (!t) {
        ct_clear_error();
        t = ct_module_buffer(m, name);
    }
    if (!t) fail_msg("the module has no tensor named %s", name);
    values_of(t, out, n);
    ct_release(t);
}

static inline bool have_opencl(void) { return ct_device_count(CT_OPENCL) > 0; }

#endif
