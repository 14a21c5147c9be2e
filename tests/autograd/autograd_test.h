/* What the autograd tests on scalars share: a leaf that requires grad, and its gradient as a
 * double. */
#ifndef CT_TEST_AUTOGRAD_TEST_H
#define CT_TEST_AUTOGRAD_TEST_H

#include <math.h>

#include "test_common.h"

/* A float64 scalar on the CPU that requires grad. */
static inline ct_tensor *scalar(double v)
{
    ct_tensor *t = ct_tensor_from_data(&v, CT_F64, NULL, 0, CT_DEVICE_CPU);
    ct_requires_grad_(t, true);
    return t;
}

/* t's gradient, NAN while it has none. */
static inline double grad_of(const ct_tensor *t)
{
    double v = NAN;
    ct_tensor *g = ct_grad(t);
    if (g) ct_item(g, &v);
    ct_release(g);
    return v;
}

#endif
