/* The activation modules: nn.ReLU, nn.GELU, nn.Sigmoid, nn.Tanh, nn.SiLU, nn.LeakyReLU,
 * nn.Softplus, nn.ELU, each the op of the same name; nn.GELU(approximate='tanh') is ct_gelu_tanh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/module_internal.h"

#define CT_DEFINE_ACTIVATION(name, kind, op)                                                     \
    static ct_tensor *name##_forward(ct_module *self, const ct_tensor *x)                        \
    {                                                                                            \
        (void)self;                                                                              \
        CT_API_ENTER;                                                                            \
        return ct_api_return(op(x));                                                             \
    }                                                                                            \
    ct_module *ct_##name##_module(void) { return ct_module_create(kind, name##_forward, NULL, NULL); }

CT_DEFINE_ACTIVATION(relu, "ReLU", ct_relu)
CT_DEFINE_ACTIVATION(gelu, "GELU", ct_gelu)
CT_DEFINE_ACTIVATION(sigmoid, "Sigmoid", ct_sigmoid)
CT_DEFINE_ACTIVATION(tanh, "Tanh", ct_tanh)
CT_DEFINE_ACTIVATION(gelu_tanh, "GELU", ct_gelu_tanh)

static char *gelu_tanh_describe(const ct_module *m)
{
    (void)m;
    char *s = malloc(24);
    if (s) strcpy(s, "approximate='tanh'");
    return s;
}

ct_module *ct_gelu_module_approximate(const char *approximate)
{
    if (!approximate) return ct_null_argument("ct_gelu_module_approximate", "approximate");
    if (strcmp(approximate, "none") == 0) return ct_gelu_module();
    if (strcmp(approximate, "tanh") != 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_gelu_module_approximate: approximate is "
                             "\"%s\"; it must be \"none\" or \"tanh\"", approximate);
    ct_module *m = ct_gelu_tanh_module();
    if (m) m->describe = gelu_tanh_describe;
    return m;
}

bool ct_module_is_relu(const ct_module *m)
{
    return m && m->forward == relu_forward && strcmp(m->kind, "ReLU") == 0;
}

/* ---- activations with parameters: nn.LeakyReLU, nn.SiLU, nn.Softplus, nn.ELU ---- */

CT_DEFINE_ACTIVATION(silu, "SiLU", ct_silu)

typedef struct activation_parameters {
    double a, b;
    const char *format; /* describe's, of a and b */
} activation_parameters;

static char *parameters_describe(const ct_module *m)
{
    const activation_parameters *p = ct_module_data(m);
    char *s = malloc(96);
    if (s) snprintf(s, 96, p->format, p->a, p->b);
    return s;
}

static ct_module *parameterised(const char *kind, ct_module_forward_fn forward, double a, double b,
                                const char *format)
{
    activation_parameters *p = malloc(sizeof *p);
    if (!p) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory", kind);
    *p = (activation_parameters){a, b, format};
    ct_module *m = ct_module_create(kind, forward, p, free);
    if (m) m->describe = parameters_describe;
    return m;
}

static ct_tensor *leaky_relu_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    const activation_parameters *p = ct_module_data(self);
    return ct_api_return(ct_leaky_relu(x, p->a));
}

static ct_tensor *softplus_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    const activation_parameters *p = ct_module_data(self);
    return ct_api_return(ct_softplus(x, p->a, p->b));
}

static ct_tensor *elu_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    const activation_parameters *p = ct_module_data(self);
    return ct_api_return(ct_elu(x, p->a));
}

ct_module *ct_leaky_relu_module(double negative_slope)
{
    return parameterised("LeakyReLU", leaky_relu_forward, negative_slope, 0.0, "negative_slope=%g");
}

ct_module *ct_softplus_module(double beta, double threshold)
{
    if (!(beta != 0.0) || isnan(threshold))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_softplus_module: beta is %g and threshold "
                             "%g; beta must be nonzero and neither NaN", beta, threshold);
    return parameterised("Softplus", softplus_forward, beta, threshold, "beta=%g, threshold=%g");
}

ct_module *ct_elu_module(double alpha)
{
    return parameterised("ELU", elu_forward, alpha, 0.0, "alpha=%g");
}
