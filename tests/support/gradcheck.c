#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "support/gradcheck.h"

#define GRADCHECK_EPS 1e-6
#define GRADCHECK_ATOL 1e-5
#define GRADCHECK_RTOL 1e-4

/* L = sum(f(inputs) * w) on the host, with grad mode off. */
static bool loss_of(ct_gradcheck_fn f, ct_tensor *const *inputs, void *context, const ct_tensor *w,
                    double *loss)
{
    ct_no_grad_push();
    ct_scope_push();
    ct_tensor *out = f(inputs, context);
    ct_tensor *weighted = out ? ct_mul(ct_to_dtype(out, CT_F64), w) : NULL;
    ct_tensor *total = weighted ? ct_sum(weighted, NULL, 0, false) : NULL;
    bool ok = total && ct_item(total, loss) == CT_OK;
    ct_scope_pop();
    ct_no_grad_pop();
    return ok;
}

bool ct_gradcheck(const char *what, ct_gradcheck_fn f, ct_tensor *const *inputs, const bool *constant,
                  int count, void *context)
{
    ct_scope_push();
    for (int i = 0; i < count; i++) {
        /* Only leaves accumulate .grad: a non-leaf input would read as a zero gradient. */
        if (!ct_is_leaf(inputs[i]))
            fail_msg("%s: input %d is not a leaf (it has %s); pass ct_detach(x)", what, i,
                     ct_grad_fn_name(inputs[i]));
        ct_zero_grad(inputs[i]);
        if (!constant || !constant[i]) ct_requires_grad_(inputs[i], true);
    }
    ct_tensor *out = f(inputs, context);
    if (!out) fail_msg("%s: the op failed: %s", what, ct_last_error_message());
    ct_manual_seed(1234);
    ct_tensor *w_cpu = ct_randn(ct_tensor_shape(out), ct_tensor_ndim(out), CT_F64, CT_DEVICE_CPU);
    ct_tensor *w = ct_to(w_cpu, ct_tensor_device(out));
    ct_tensor *loss = ct_sum(ct_mul(ct_to_dtype(out, CT_F64), w), NULL, 0, false);
    if (!loss) fail_msg("%s: the loss failed: %s", what, ct_last_error_message());
    if (ct_requires_grad(loss) && ct_backward(loss) != CT_OK)
        fail_msg("%s: backward failed: %s", what, ct_last_error_message());

    bool ok = true;
    for (int i = 0; i < count && ok; i++) {
        if (constant && constant[i]) continue;
        int64_t n = ct_numel(inputs[i]);
        double *values = malloc(sizeof(double) * (size_t)(n ? n : 1));
        double *analytic = calloc((size_t)(n ? n : 1), sizeof(double));
        assert_int_equal(ct_tensor_to_array(inputs[i], values, sizeof(double) * (size_t)n), CT_OK);
        ct_tensor *grad = ct_grad(inputs[i]);
        if (grad) assert_int_equal(ct_tensor_to_array(grad, analytic, sizeof(double) * (size_t)n), CT_OK);
        for (int64_t j = 0; j < n && ok; j++) {
            double plus = 0, minus = 0, saved = values[j];
            ct_tensor *perturbed[8];
            for (int k = 0; k < count; k++) perturbed[k] = inputs[k];
            values[j] = saved + GRADCHECK_EPS;
            perturbed[i] = ct_tensor_from_data(values, CT_F64, ct_tensor_shape(inputs[i]),
                                               ct_tensor_ndim(inputs[i]), ct_tensor_device(inputs[i]));
            bool ok_plus = loss_of(f, perturbed, context, w, &plus);
            values[j] = saved - GRADCHECK_EPS;
            ct_tensor *lower = ct_tensor_from_data(values, CT_F64, ct_tensor_shape(inputs[i]),
                                                   ct_tensor_ndim(inputs[i]), ct_tensor_device(inputs[i]));
            perturbed[i] = lower;
            bool ok_minus = loss_of(f, perturbed, context, w, &minus);
            values[j] = saved;
            if (!ok_plus || !ok_minus) fail_msg("%s: the op failed while perturbing: %s", what, ct_last_error_message());
            double numeric = (plus - minus) / (2 * GRADCHECK_EPS);
            if (fabs(analytic[j] - numeric) > GRADCHECK_ATOL + GRADCHECK_RTOL * fabs(numeric)) {
                print_error("%s: input %d element %lld: backward gives %.10g, finite differences %.10g\n",
                            what, i, (long long)j, analytic[j], numeric);
                ok = false;
            }
        }
        ct_release(grad);
        free(values);
        free(analytic);
    }
    ct_scope_pop();
    for (int i = 0; i < count; i++) ct_zero_grad(inputs[i]);
    if (!ok) fail_msg("%s: gradients differ from finite differences", what);
    return ok;
}
