/* Tensors for tests from C arrays (tensors.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include "support/tensors.h"

ct_tensor *ct_test_tensor_from(const void *values, ct_dtype values_dtype, const int64_t *shape, int ndim,
                               ct_dtype dtype, ct_device device)
{
    ct_tensor *given = ct_tensor_from_data(values, values_dtype, shape, ndim, CT_DEVICE_CPU);
    ct_tensor *converted = ct_to_dtype(given, dtype);
    ct_tensor *out = ct_to(converted, device);
    ct_release(given);
    ct_release(converted);
    assert_non_null(out);
    return out;
}

ct_tensor *ct_test_small_integers(const int64_t *shape, int ndim, ct_dtype dtype, int seed, ct_device device)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float *values = malloc(sizeof(float) * (size_t)(n ? n : 1));
    assert_non_null(values);
    for (int64_t i = 0; i < n; i++) values[i] = (float)((i * 7 + seed * 5) % 9) - 4.0f;
    ct_tensor *t = ct_test_tensor_from(values, CT_F32, shape, ndim, dtype, device);
    free(values);
    return t;
}
