/* Tensors for tests made from C arrays on the host: the values given in one dtype, converted to
 * the dtype under test and moved to the device under test. */
#ifndef CT_TEST_TENSORS_H
#define CT_TEST_TENSORS_H

#include "ctorch.h"

/* A tensor of dtype on device holding values, a row-major C array of values_dtype (float32 or
 * float64 values, say, which the conversion rounds to dtype); fails the test where it cannot be
 * made. */
ct_tensor *ct_test_tensor_from(const void *values, ct_dtype values_dtype, const int64_t *shape, int ndim,
                               ct_dtype dtype, ct_device device);

/* Small integers from -4 to 4 of dtype on device, in a pattern that seed shifts: every dtype holds
 * them exactly, and 16-bit products of them and their sums are exact in float32. */
ct_tensor *ct_test_small_integers(const int64_t *shape, int ndim, ct_dtype dtype, int seed, ct_device device);

#endif
