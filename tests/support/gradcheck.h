/* Finite-difference gradient checks (torch.autograd.gradcheck): the gradient ct_backward gives
 * for L = sum(f(inputs) * w), with w random, against central differences of L, in float64. */
#ifndef CT_TEST_GRADCHECK_H
#define CT_TEST_GRADCHECK_H

#include <stdbool.h>

#include "ctorch.h"

/* Builds the op's output from the inputs (a new reference), e.g. ct_mul(inputs[0], inputs[1]). */
typedef ct_tensor *(*ct_gradcheck_fn)(ct_tensor *const *inputs, void *context);

/* inputs: float64 tensors on one device (they are made to require grad; their .grad is
 * cleared). Inputs with requires_grad false before the call (pass them in `constant`) are held
 * fixed. Returns true when every analytic derivative is within atol + rtol * |numeric| of the
 * central difference with step eps; otherwise fails with a cmocka message naming the input,
 * element and both values. */
bool ct_gradcheck(const char *what, ct_gradcheck_fn f, ct_tensor *const *inputs, const bool *constant,
                  int count, void *context);

#endif
