/* nn.LayerNorm and nn.Embedding over ct_layer_norm and ct_embedding, with PyTorch's parameter
 * names and initialisation, so that state dicts load both ways. */
#include <stdio.h>
#include <stdlib.h>

#include "ctorch/nn_functional.h"
#include "nn/module_internal.h"

typedef struct layer_norm_layer {
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    double eps;
    bool affine;
} layer_norm_layer;

static ct_tensor *layer_norm_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    const layer_norm_layer *ln = self->data;
    return ct_api_return(ct_layer_norm(x, ln->shape, ln->ndim, ct_module_own_parameter(self, "weight"),
                                       ct_module_own_parameter(self, "bias"), ln->eps));
}

static char *layer_norm_describe(const ct_module *m)
{
    const layer_norm_layer *ln = m->data;
    char shape[256], *s = malloc(320);
    if (!s) return NULL;
    /* PyTorch prints normalized_shape as a tuple: (768,) */
    int at = snprintf(shape, sizeof shape, "(");
    for (int k = 0; k < ln->ndim && at < (int)sizeof shape - 24; k++)
        at += snprintf(shape + at, sizeof shape - (size_t)at, "%lld,%s", (long long)ln->shape[k],
                       k + 1 < ln->ndim ? " " : "");
    if (ln->ndim > 1) at--; /* (2, 3) but (3,) */
    snprintf(shape + at, sizeof shape - (size_t)at, ")");
    snprintf(s, 320, "%s, eps=%g, elementwise_affine=%s", shape, ln->eps, ln->affine ? "True" : "False");
    return s;
}

static ct_status add_parameter(ct_module *m, const char *name, ct_tensor *t)
{
    if (!t) return ct_last_error();
    ct_status status = ct_module_register_parameter(m, name, t);
    ct_release(t);
    return status;
}

ct_module *ct_layer_norm_module(const int64_t *shape, int ndim, double eps, bool elementwise_affine)
{
    const char *function = "ct_layer_norm_module";
    if (!shape) return ct_null_argument(function, "shape");
    if (ndim < 1 || ndim > CT_MAX_DIMS)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: normalized_shape must have 1 to %d dims "
                             "(got %d)", function, CT_MAX_DIMS, ndim);
    for (int k = 0; k < ndim; k++)
        if (shape[k] <= 0)
            return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: normalized_shape[%d] is %lld; sizes "
                                 "must be positive", function, k, (long long)shape[k]);
    if (!(eps >= 0.0))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: eps must be >= 0, but it is %g", function, eps);
    layer_norm_layer *data = malloc(sizeof *data);
    if (!data) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    *data = (layer_norm_layer){.ndim = ndim, .eps = eps, .affine = elementwise_affine};
    for (int k = 0; k < ndim; k++) data->shape[k] = shape[k];
    ct_module *m = ct_module_create("LayerNorm", layer_norm_forward, data, free);
    if (!m) {
        free(data);
        return NULL;
    }
    m->describe = layer_norm_describe;
    ct_api_enter(); /* the tensors made here are the module's, not the caller's */
    ct_status status = CT_OK;
    if (elementwise_affine) {
        status = add_parameter(m, "weight", ct_ones(shape, ndim, CT_F32, CT_DEVICE_CPU));
        if (status == CT_OK) status = add_parameter(m, "bias", ct_zeros(shape, ndim, CT_F32, CT_DEVICE_CPU));
    }
    ct_api_return(NULL);
    if (status != CT_OK) {
        ct_module_release(m);
        return NULL;
    }
    return m;
}

typedef struct embedding_layer {
    int64_t num_embeddings, embedding_dim, padding_idx;
} embedding_layer;

static ct_tensor *embedding_forward(ct_module *self, const ct_tensor *indices)
{
    CT_API_ENTER;
    const embedding_layer *e = self->data;
    return ct_api_return(ct_embedding(ct_module_own_parameter(self, "weight"), indices, e->padding_idx));
}

static char *embedding_describe(const ct_module *m)
{
    const embedding_layer *e = m->data;
    char *s = malloc(96);
    if (!s) return NULL;
    int at = snprintf(s, 96, "%lld, %lld", (long long)e->num_embeddings, (long long)e->embedding_dim);
    if (e->padding_idx >= 0) snprintf(s + at, 96 - (size_t)at, ", padding_idx=%lld", (long long)e->padding_idx);
    return s;
}

ct_module *ct_embedding_module(int64_t num_embeddings, int64_t embedding_dim, int64_t padding_idx)
{
    const char *function = "ct_embedding_module";
    if (num_embeddings <= 0 || embedding_dim <= 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: num_embeddings %lld and embedding_dim %lld "
                             "must be positive", function, (long long)num_embeddings,
                             (long long)embedding_dim);
    if (padding_idx != -1 && (padding_idx < 0 || padding_idx >= num_embeddings))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: padding_idx %lld must be in [0, %lld), or "
                             "-1 for none", function, (long long)padding_idx,
                             (long long)num_embeddings);
    embedding_layer *data = malloc(sizeof *data);
    if (!data) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    *data = (embedding_layer){num_embeddings, embedding_dim, padding_idx};
    ct_module *m = ct_module_create("Embedding", embedding_forward, data, free);
    if (!m) {
        free(data);
        return NULL;
    }
    m->describe = embedding_describe;
    ct_api_enter();
    /* N(0, 1) from the global seed, the padding row zeroed, as nn.Embedding.reset_parameters */
    int64_t shape[2] = {num_embeddings, embedding_dim};
    ct_tensor *weight = ct_randn(shape, 2, CT_F32, CT_DEVICE_CPU);
    ct_status status = weight ? CT_OK : ct_last_error();
    if (status == CT_OK && padding_idx >= 0) {
        ct_tensor *row = ct_narrow(weight, 0, padding_idx, 1);
        status = row ? ct_tensor_fill(row, 0.0) : ct_last_error();
        ct_release(row);
    }
    if (status == CT_OK) status = add_parameter(m, "weight", weight);
    else ct_release(weight);
    ct_api_return(NULL);
    if (status != CT_OK) {
        ct_module_release(m);
        return NULL;
    }
    return m;
}
