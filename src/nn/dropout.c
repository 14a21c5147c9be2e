/* nn.Dropout: while training, each element is kept with probability 1 - p and scaled by
 * 1 / (1 - p); in eval mode the input passes through. The mask comes from ct_rand on the
 * input's device, so a seed gives the same masks on every device, and the output is x * mask,
 * which autograd differentiates through ct_mul. */
#include <stdio.h>
#include <stdlib.h>

#include "nn/module_internal.h"

typedef struct dropout {
    double p;
} dropout;

static ct_tensor *dropout_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    double p = ((const dropout *)self->data)->p;
    if (!ct_dtype_is_floating(x->dtype))
        return ct_api_return(ct_error_null(CT_ERR_DTYPE, "Dropout: the input is %s; dropout needs a "
                                           "float32 or float64 input", ct_dtype_name(x->dtype)));
    if (!self->training || p == 0.0) return ct_api_return(ct_retain((ct_tensor *)x));
    if (p == 1.0) return ct_api_return(ct_mul_scalar(x, 0.0));
    ct_tensor *r = ct_rand(x->shape, x->ndim, x->dtype, x->storage->device);
    ct_tensor *keep = ct_ge_scalar(r, p);
    ct_tensor *keep_float = ct_to_dtype(keep, x->dtype);
    ct_tensor *mask = ct_mul_scalar(keep_float, 1.0 / (1.0 - p));
    ct_tensor *out = ct_mul(x, mask);
    ct_release(r);
    ct_release(keep);
    ct_release(keep_float);
    ct_release(mask);
    return ct_api_return(out);
}

static char *dropout_describe(const ct_module *m)
{
    char *s = malloc(64);
    if (s) snprintf(s, 64, "p=%g, inplace=False", ((const dropout *)m->data)->p);
    return s;
}

ct_module *ct_dropout(double p)
{
    if (!(p >= 0.0 && p <= 1.0))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_dropout: dropout probability has to be "
                             "between 0 and 1, but got %g", p);
    dropout *config = malloc(sizeof *config);
    if (!config) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_dropout: no host memory");
    config->p = p;
    ct_module *m = ct_module_create("Dropout", dropout_forward, config, free);
    if (!m) {
        free(config);
        return NULL;
    }
    m->describe = dropout_describe;
    return m;
}
