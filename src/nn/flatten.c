/* nn.Flatten: dims start_dim..end_dim become one (a view when the strides allow); nn.Unflatten, its
 * inverse; nn.Identity. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- nn.Unflatten: one dim becomes several (always a view: splitting a dim needs no copy) ---- */

typedef struct unflatten {
    int dim, count;
    int64_t sizes[CT_MAX_DIMS];
} unflatten;

static ct_tensor *unflatten_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    const unflatten *config = self->data;
    int ndim = x->ndim, dim = config->dim < 0 ? config->dim + ndim : config->dim;
    if (dim < 0 || dim >= ndim)
        return ct_api_return(ct_error_null(CT_ERR_INDEX, "Unflatten: dim %d is out of range for an input of %d "
                                           "dims", config->dim, ndim));
    if (ndim - 1 + config->count > CT_MAX_DIMS)
        return ct_api_return(ct_error_null(CT_ERR_SHAPE, "Unflatten: the result would have %d dims; ctorch "
                                           "tensors have at most %d", ndim - 1 + config->count, CT_MAX_DIMS));
    int64_t known = 1;
    int unknown = -1;
    for (int i = 0; i < config->count; i++) {
        if (config->sizes[i] == -1) unknown = i;
        else known *= config->sizes[i];
    }
    int64_t sizes[CT_MAX_DIMS];
    memcpy(sizes, config->sizes, sizeof sizes);
    if (unknown >= 0 && known > 0 && x->shape[dim] % known == 0) sizes[unknown] = x->shape[dim] / known;
    int64_t product = 1;
    for (int i = 0; i < config->count; i++) product *= sizes[i];
    if (product != x->shape[dim] || (unknown >= 0 && known == 0)) {
        char shape[256];
        return ct_api_return(ct_error_null(CT_ERR_SHAPE, "Unflatten: unflattened_size must multiply to the size "
                                           "of dim %d of the input, %lld (the input is %s)", dim,
                                           (long long)x->shape[dim], ct_shape_format(x->shape, ndim, shape, sizeof shape)));
    }
    int64_t shape[CT_MAX_DIMS];
    int out = 0;
    for (int d = 0; d < ndim; d++) {
        if (d != dim) shape[out++] = x->shape[d];
        else
            for (int i = 0; i < config->count; i++) shape[out++] = sizes[i];
    }
    return ct_api_return(ct_view(x, shape, out));
}

static char *unflatten_describe(const ct_module *m)
{
    const unflatten *config = m->data;
    char *s = malloc(64 + 24 * CT_MAX_DIMS);
    if (!s) return NULL;
    int at = sprintf(s, "dim=%d, unflattened_size=(", config->dim);
    for (int i = 0; i < config->count; i++)
        at += sprintf(s + at, i ? ", %lld" : "%lld", (long long)config->sizes[i]);
    sprintf(s + at, config->count == 1 ? ",)" : ")");
    return s;
}

ct_module *ct_unflatten_module(int dim, const int64_t *sizes, int count)
{
    static const char *FN = "ct_unflatten_module";
    if (!sizes) return ct_null_argument(FN, "sizes");
    if (count < 1 || count > CT_MAX_DIMS)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: count is %d; unflattened_size has 1 to %d sizes", FN,
                             count, CT_MAX_DIMS);
    int unknowns = 0;
    for (int i = 0; i < count; i++) {
        if (sizes[i] == -1) unknowns++;
        else if (sizes[i] < 0)
            return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: sizes[%d] is %lld; sizes are >= 0, or -1 for the one "
                                 "to infer", FN, i, (long long)sizes[i]);
    }
    if (unknowns > 1)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: %d sizes are -1; only one can be inferred", FN, unknowns);
    unflatten *config = calloc(1, sizeof *config);
    if (!config) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", FN);
    config->dim = dim;
    config->count = count;
    memcpy(config->sizes, sizes, sizeof *sizes * (size_t)count);
    ct_module *m = ct_module_create("Unflatten", unflatten_forward, config, free);
    if (!m) {
        free(config);
        return NULL;
    }
    m->describe = unflatten_describe;
    return m;
}

/* ---- nn.Identity ---- */

static ct_tensor *identity_forward(ct_module *self, const ct_tensor *x)
{
    (void)self;
    CT_API_ENTER;
    return ct_api_return(ct_retain((ct_tensor *)x));
}

ct_module *ct_identity_module(void) { return ct_module_create("Identity", identity_forward, NULL, NULL); }
