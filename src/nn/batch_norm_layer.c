/* nn.BatchNorm1d / nn.BatchNorm2d over ct_batch_norm: weight and bias parameters (affine), the
 * running_mean, running_var and num_batches_tracked buffers (track_running_stats), batch
 * statistics while training and the running ones in eval mode. */
#include <stdio.h>
#include <stdlib.h>

#include "ctorch/nn_functional.h"
#include "nn/batch_norm_layer.h"

ct_batch_norm_options ct_batch_norm_options_default(void)
{
    return (ct_batch_norm_options){.eps = 1e-5, .momentum = 0.1, .affine = true, .track_running_stats = true};
}

ct_status ct_batch_norm_layer_count_batch(ct_module *self)
{
    ct_tensor *counter = ct_module_own_buffer(self, "num_batches_tracked");
    if (!counter) return CT_OK;
    /* += 1, on its device, in its dtype (int64) */
    ct_no_grad_push();
    ct_tensor *one = ct_ones(NULL, 0, CT_I64, counter->storage->device);
    ct_tensor *next = ct_add(counter, one);
    ct_status status = next ? ct_copy_(counter, next) : ct_last_error();
    ct_release(one);
    ct_release(next);
    ct_no_grad_pop();
    return status;
}

ct_status ct_batch_norm_layer_check_input(const ct_module *self, const ct_tensor *x)
{
    const ct_batch_norm_layer *bn = self->data;
    bool two_d = bn->dims == 2;
    if (two_d ? x->ndim != 4 : (x->ndim != 2 && x->ndim != 3))
        return ct_error(CT_ERR_SHAPE, "%s: expected %s input (got %dD input)", self->kind,
                        two_d ? "4D" : "2D or 3D", x->ndim);
    if (x->shape[1] != bn->num_features) {
        char shape[256];
        return ct_error(CT_ERR_SHAPE, "%s(%lld): the input has shape %s; its dim 1 (channels) must be "
                        "%lld", self->kind, (long long)bn->num_features,
                        ct_shape_format(x->shape, x->ndim, shape, sizeof shape),
                        (long long)bn->num_features);
    }
    return CT_OK;
}

ct_tensor *ct_batch_norm_layer_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    const ct_batch_norm_layer *bn = self->data;
    if (ct_batch_norm_layer_check_input(self, x) != CT_OK) return ct_api_return(NULL);
    const ct_batch_norm_options *o = &bn->options;
    bool use_batch_statistics = self->training || !o->track_running_stats;
    if (self->training && ct_batch_norm_layer_count_batch(self) != CT_OK) return ct_api_return(NULL);
    return ct_api_return(ct_batch_norm(x, ct_module_own_buffer(self, "running_mean"),
                                       ct_module_own_buffer(self, "running_var"),
                                       ct_module_own_parameter(self, "weight"),
                                       ct_module_own_parameter(self, "bias"), use_batch_statistics,
                                       o->momentum, o->eps));
}

static char *batch_norm_describe(const ct_module *m)
{
    const ct_batch_norm_layer *bn = m->data;
    char *s = malloc(160);
    if (s)
        snprintf(s, 160, "%lld, eps=%g, momentum=%g, affine=%s, track_running_stats=%s",
                 (long long)bn->num_features, bn->options.eps, bn->options.momentum,
                 bn->options.affine ? "True" : "False", bn->options.track_running_stats ? "True" : "False");
    return s;
}

static ct_status add_tensor(ct_module *m, const char *name, bool parameter, int64_t n, double value,
                            ct_dtype dtype)
{
    ct_tensor *t = ct_full(&n, dtype == CT_I64 ? 0 : 1, value, dtype, CT_DEVICE_CPU);
    if (!t) return ct_last_error();
    ct_status status = parameter ? ct_module_register_parameter(m, name, t) : ct_module_register_buffer(m, name, t);
    ct_release(t);
    return status;
}

static ct_module *make(const char *function, const char *kind, int dims, int64_t num_features,
                       const ct_batch_norm_options *options)
{
    ct_batch_norm_options o = options ? *options : ct_batch_norm_options_default();
    if (num_features <= 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: num_features is %lld; it must be positive",
                             function, (long long)num_features);
    if (!(o.eps > 0.0) || !(o.momentum >= 0.0 && o.momentum <= 1.0))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: eps %g must be positive and momentum %g in "
                             "[0, 1]", function, o.eps, o.momentum);
    ct_batch_norm_layer *data = malloc(sizeof *data);
    if (!data) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    *data = (ct_batch_norm_layer){num_features, dims, o};
    ct_module *m = ct_module_create(kind, ct_batch_norm_layer_forward, data, free);
    if (!m) {
        free(data);
        return NULL;
    }
    m->describe = batch_norm_describe;
    ct_api_enter(); /* the tensors made here are the module's, not the caller's */
    ct_status status = CT_OK;
    if (o.affine) {
        status = add_tensor(m, "weight", true, num_features, 1.0, CT_F32);
        if (status == CT_OK) status = add_tensor(m, "bias", true, num_features, 0.0, CT_F32);
    }
    if (status == CT_OK && o.track_running_stats) {
        status = add_tensor(m, "running_mean", false, num_features, 0.0, CT_F32);
        if (status == CT_OK) status = add_tensor(m, "running_var", false, num_features, 1.0, CT_F32);
        if (status == CT_OK) status = add_tensor(m, "num_batches_tracked", false, 1, 0.0, CT_I64);
    }
    ct_api_return(NULL);
    if (status != CT_OK) {
        ct_module_release(m);
        return NULL;
    }
    return m;
}

ct_module *ct_batch_norm1d(int64_t num_features, const ct_batch_norm_options *options)
{
    return make("ct_batch_norm1d", "BatchNorm1d", 1, num_features, options);
}

ct_module *ct_batch_norm2d(int64_t num_features, const ct_batch_norm_options *options)
{
    return make("ct_batch_norm2d", "BatchNorm2d", 2, num_features, options);
}
