/* nn.Conv2d over ct_conv2d (im2col + GEMM), with PyTorch's initialisation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/nn_functional.h"
#include "nn/module_internal.h"

typedef struct conv2d {
    int64_t in_channels, out_channels, kernel[2];
    ct_conv2d_options options;
} conv2d;

ct_conv2d_options ct_conv2d_options_default(void)
{
    return (ct_conv2d_options){.stride = {1, 1}, .padding = {0, 0}, .dilation = {1, 1}, .groups = 1,
                               .bias = true};
}

static ct_tensor *conv2d_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    const conv2d *c = self->data;
    return ct_api_return(ct_conv2d(x, ct_module_own_parameter(self, "weight"),
                                   ct_module_own_parameter(self, "bias"), c->options.stride,
                                   c->options.padding, c->options.dilation, c->options.groups));
}

static char *conv2d_describe(const ct_module *m)
{
    const conv2d *c = m->data;
    const ct_conv2d_options *o = &c->options;
    char *s = malloc(256);
    if (!s) return NULL;
    int n = snprintf(s, 256, "%lld, %lld, kernel_size=(%lld, %lld), stride=(%lld, %lld)",
                     (long long)c->in_channels, (long long)c->out_channels, (long long)c->kernel[0],
                     (long long)c->kernel[1], (long long)o->stride[0], (long long)o->stride[1]);
    /* PyTorch shows the settings that differ from their defaults */
    if (o->padding[0] || o->padding[1])
        n += snprintf(s + n, 256 - (size_t)n, ", padding=(%lld, %lld)", (long long)o->padding[0],
                      (long long)o->padding[1]);
    if (o->dilation[0] != 1 || o->dilation[1] != 1)
        n += snprintf(s + n, 256 - (size_t)n, ", dilation=(%lld, %lld)", (long long)o->dilation[0],
                      (long long)o->dilation[1]);
    if (o->groups != 1) n += snprintf(s + n, 256 - (size_t)n, ", groups=%lld", (long long)o->groups);
    if (!o->bias) snprintf(s + n, 256 - (size_t)n, ", bias=False");
    return s;
}

ct_module *ct_conv2d_module(int64_t in_channels, int64_t out_channels, const int64_t kernel_size[2],
                            const ct_conv2d_options *options)
{
    const char *function = "ct_conv2d_module";
    if (!kernel_size) return ct_null_argument(function, "kernel_size");
    ct_conv2d_options o = options ? *options : ct_conv2d_options_default();
    if (in_channels <= 0 || out_channels <= 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: in_channels %lld and out_channels %lld must "
                             "be positive", function, (long long)in_channels, (long long)out_channels);
    if (kernel_size[0] <= 0 || kernel_size[1] <= 0 || o.stride[0] <= 0 || o.stride[1] <= 0 ||
        o.dilation[0] <= 0 || o.dilation[1] <= 0 || o.padding[0] < 0 || o.padding[1] < 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: kernel_size (%lld, %lld), stride (%lld, %lld) "
                             "and dilation (%lld, %lld) must be positive and padding (%lld, %lld) not "
                             "negative", function, (long long)kernel_size[0], (long long)kernel_size[1],
                             (long long)o.stride[0], (long long)o.stride[1], (long long)o.dilation[0],
                             (long long)o.dilation[1], (long long)o.padding[0], (long long)o.padding[1]);
    if (o.groups <= 0 || in_channels % o.groups || out_channels % o.groups)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: groups is %lld; it must be positive and "
                             "divide in_channels (%lld) and out_channels (%lld)", function,
                             (long long)o.groups, (long long)in_channels, (long long)out_channels);
    conv2d *config = malloc(sizeof *config);
    if (!config) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    *config = (conv2d){in_channels, out_channels, {kernel_size[0], kernel_size[1]}, o};
    ct_module *m = ct_module_create("Conv2d", conv2d_forward, config, free);
    if (!m) {
        free(config);
        return NULL;
    }
    m->describe = conv2d_describe;
    /* kaiming_uniform_(a=sqrt(5)): bound 1 / sqrt(fan_in), fan_in = in / groups * kH * kW */
    int64_t fan_in = in_channels / o.groups * kernel_size[0] * kernel_size[1];
    double bound = 1.0 / sqrt((double)fan_in);
    int64_t wshape[4] = {out_channels, in_channels / o.groups, kernel_size[0], kernel_size[1]};
    if (ct_module_add_uniform_parameter(m, "weight", wshape, 4, bound) != CT_OK ||
        (o.bias && ct_module_add_uniform_parameter(m, "bias", &out_channels, 1, bound) != CT_OK)) {
        ct_module_release(m);
        return NULL;
    }
    return m;
}
