/* The activation modules: nn.ReLU, nn.GELU, nn.Sigmoid, nn.Tanh, each the op of the same name;
 * nn.GELU(approximate='tanh') is ct_gelu_tanh. */
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
