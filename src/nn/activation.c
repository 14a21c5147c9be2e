/* The activation modules: nn.ReLU, nn.GELU, nn.Sigmoid, nn.Tanh, each the op of the same name. */
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

bool ct_module_is_relu(const ct_module *m)
{
    return m && m->forward == relu_forward && strcmp(m->kind, "ReLU") == 0;
}
