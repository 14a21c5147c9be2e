/* nn.Flatten: dims start_dim..end_dim become one (a view when the strides allow). */
#include <stdio.h>
#include <stdlib.h>

#include "nn/module_internal.h"

typedef struct flatten {
    int start_dim, end_dim;
} flatten;

static ct_tensor *flatten_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    const flatten *config = self->data;
    return ct_api_return(ct_flatten(x, config->start_dim, config->end_dim));
}

static char *flatten_describe(const ct_module *m)
{
    const flatten *config = m->data;
    char *s = malloc(64);
    if (s) snprintf(s, 64, "start_dim=%d, end_dim=%d", config->start_dim, config->end_dim);
    return s;
}

ct_module *ct_flatten_module(int start_dim, int end_dim)
{
    flatten *config = malloc(sizeof *config);
    if (!config) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_flatten_module: no host memory");
    config->start_dim = start_dim;
    config->end_dim = end_dim;
    ct_module *m = ct_module_create("Flatten", flatten_forward, config, free);
    if (!m) {
        free(config);
        return NULL;
    }
    m->describe = flatten_describe;
    return m;
}
