/* nn.Linear: y = x W^T + b, with PyTorch's initialisation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/module_internal.h"
#include "ops/nn_internal.h"

typedef struct linear {
    int64_t in_features, out_features;
} linear;

/* The layer on x through apply (ct_linear_apply, or ct_linear_relu_apply for a Linear that a
 * ReLU follows), after the layer's own checks. */
static ct_tensor *linear_forward_with(ct_module *self, const ct_tensor *x,
                                      ct_tensor *(*apply)(const char *, const ct_tensor *,
                                                          const ct_tensor *, const ct_tensor *))
{
    CT_API_ENTER;
    const linear *config = self->data;
    ct_tensor *weight = ct_module_own_parameter(self, "weight");
    ct_tensor *bias = ct_module_own_parameter(self, "bias");
    if (!weight) /* a custom module may have been built around the data; be safe */
        return ct_api_return(ct_error_null(CT_ERR_INTERNAL, "Linear: the weight is missing"));
    if (x->ndim < 1 || x->shape[x->ndim - 1] != config->in_features) {
        char shape[256];
        return ct_api_return(ct_error_null(
            CT_ERR_SHAPE, "Linear(in_features=%lld, out_features=%lld): the input has shape %s; its "
            "last dim must be %lld", (long long)config->in_features, (long long)config->out_features,
            ct_shape_format(x->shape, x->ndim, shape, sizeof shape), (long long)config->in_features));
    }
    return ct_api_return(apply("Linear", x, weight, bias));
}

static ct_tensor *linear_forward(ct_module *self, const ct_tensor *x)
{
    return linear_forward_with(self, x, ct_linear_apply);
}

bool ct_module_is_linear(const ct_module *m)
{
    return m && m->forward == linear_forward && strcmp(m->kind, "Linear") == 0;
}

ct_tensor *ct_linear_relu_forward(ct_module *linear, const ct_tensor *x)
{
    return linear_forward_with(linear, x, ct_linear_relu_apply);
}

static char *linear_describe(const ct_module *m)
{
    const linear *config = m->data;
    char *s = malloc(128);
    if (s)
        snprintf(s, 128, "in_features=%lld, out_features=%lld, bias=%s", (long long)config->in_features,
                 (long long)config->out_features, ct_module_own_parameter(m, "bias") ? "True" : "False");
    return s;
}

ct_module *ct_linear(int64_t in_features, int64_t out_features, bool bias)
{
    if (in_features < 0 || out_features < 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_linear: in_features %lld and out_features "
                             "%lld must not be negative", (long long)in_features, (long long)out_features);
    linear *config = malloc(sizeof *config);
    if (!config) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_linear: no host memory");
    config->in_features = in_features;
    config->out_features = out_features;
    ct_module *m = ct_module_create("Linear", linear_forward, config, free);
    if (!m) {
        free(config);
        return NULL;
    }
    m->describe = linear_describe;
    /* kaiming_uniform_(a=sqrt(5)) gives bound sqrt(6 / ((1 + 5) fan_in)) = 1 / sqrt(fan_in); the
     * bias uses the same bound. fan_in 0 gives bound 0 (PyTorch skips the init: the values are
     * never read). */
    double bound = in_features > 0 ? 1.0 / sqrt((double)in_features) : 0.0;
    int64_t wshape[2] = {out_features, in_features}, bshape[1] = {out_features};
    if (ct_module_add_uniform_parameter(m, "weight", wshape, 2, bound) != CT_OK ||
        (bias && ct_module_add_uniform_parameter(m, "bias", bshape, 1, bound) != CT_OK)) {
        ct_module_release(m);
        return NULL;
    }
    return m;
}
