/* Helpers of the nn and optim tests: tensors from and to C arrays of doubles, and the devices
 * to run on. */
#ifndef CT_TEST_NN_TEST_H
#define CT_TEST_NN_TEST_H

#include <math.h>

#include "support/tensors.h"
#include "test_common.h"

#define OPENCL0 ((ct_device){CT_OPENCL, 0})

/* A tensor of dtype on device holding values (given as doubles). */
static inline ct_tensor *tensor_of(const double *values, const int64_t *shape, int ndim, ct_dtype dtype,
                                   ct_device device)
{
    return ct_test_tensor_from(values, CT_F64, shape, ndim, dtype, device);
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

/* got within rtol of want, elementwise, with an absolute floor of rtol times want's largest
 * magnitude (for elements that are nearly zero). */
static inline void assert_close_to_scale(const double *got, const double *want, int64_t n, double rtol,
                                         const char *what)
{
    double largest = 0;
    for (int64_t i = 0; i < n; i++) largest = fmax(largest, fabs(want[i]));
    assert_close_array(got, want, n, rtol, rtol * largest, what);
}

/* Every parameter's values (or gradients) in registration order, at most capacity of them;
 * returns how many. */
static inline int64_t module_parameter_values(const ct_module *m, bool gradients, double *out, int64_t capacity)
{
    ct_named_tensors *list = ct_module_named_parameters(m);
    assert_non_null(list);
    int64_t n = 0;
    for (int64_t i = 0; i < list->count; i++) {
        ct_tensor *t = gradients ? ct_grad(list->tensors[i]) : ct_retain(list->tensors[i]);
        if (!t) fail_msg("%s has no %s", list->names[i], gradients ? "gradient" : "value");
        assert_true(n + ct_numel(t) <= capacity);
        values_of(t, out + n, ct_numel(t));
        n += ct_numel(t);
        ct_release(t);
    }
    ct_named_tensors_free(list);
    return n;
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
