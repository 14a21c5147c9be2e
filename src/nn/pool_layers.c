/* nn.MaxPool2d and nn.AvgPool2d over ct_max_pool2d / ct_avg_pool2d. */
#include <stdio.h>
#include <stdlib.h>

#include "ctorch/nn_functional.h"
#include "nn/module_internal.h"

typedef struct pool2d {
    int64_t kernel[2], stride[2], padding[2];
    bool count_include_pad;
} pool2d;

static ct_tensor *max_pool_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    const pool2d *p = self->data;
    return ct_api_return(ct_max_pool2d(x, p->kernel, p->stride, p->padding));
}

static ct_tensor *avg_pool_forward(ct_module *self, const ct_tensor *x)
{
    CT_API_ENTER;
    const pool2d *p = self->data;
    return ct_api_return(ct_avg_pool2d(x, p->kernel, p->stride, p->padding, p->count_include_pad));
}

/* PyTorch prints a square window as one number: kernel_size=2. */
static int pair(char *s, size_t size, const char *name, const int64_t *v)
{
    if (v[0] == v[1]) return snprintf(s, size, "%s=%lld", name, (long long)v[0]);
    return snprintf(s, size, "%s=(%lld, %lld)", name, (long long)v[0], (long long)v[1]);
}

static char *pool_describe(const ct_module *m)
{
    const pool2d *p = m->data;
    char *s = malloc(256);
    if (!s) return NULL;
    int n = pair(s, 256, "kernel_size", p->kernel);
    n += snprintf(s + n, 256 - (size_t)n, ", ");
    n += pair(s + n, 256 - (size_t)n, "stride", p->stride);
    n += snprintf(s + n, 256 - (size_t)n, ", ");
    n += pair(s + n, 256 - (size_t)n, "padding", p->padding);
    if (m->forward == max_pool_forward)
        snprintf(s + n, 256 - (size_t)n, ", dilation=1, ceil_mode=False");
    return s;
}

static ct_module *make(const char *function, const char *kind, ct_module_forward_fn forward,
                       const int64_t kernel_size[2], const int64_t stride[2], const int64_t padding[2],
                       bool count_include_pad)
{
    if (!kernel_size) return ct_null_argument(function, "kernel_size");
    pool2d config = {{kernel_size[0], kernel_size[1]},
                     {stride ? stride[0] : kernel_size[0], stride ? stride[1] : kernel_size[1]},
                     {padding ? padding[0] : 0, padding ? padding[1] : 0},
                     count_include_pad};
    for (int d = 0; d < 2; d++)
        if (config.kernel[d] <= 0 || config.stride[d] <= 0 || config.padding[d] < 0 ||
            config.padding[d] * 2 > config.kernel[d])
            return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: kernel_size (%lld, %lld) and stride "
                                 "(%lld, %lld) must be positive, and padding (%lld, %lld) at most half "
                                 "the kernel size", function, (long long)config.kernel[0],
                                 (long long)config.kernel[1], (long long)config.stride[0],
                                 (long long)config.stride[1], (long long)config.padding[0],
                                 (long long)config.padding[1]);
    pool2d *data = malloc(sizeof *data);
    if (!data) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    *data = config;
    ct_module *m = ct_module_create(kind, forward, data, free);
    if (!m) {
        free(data);
        return NULL;
    }
    m->describe = pool_describe;
    return m;
}

ct_module *ct_max_pool2d_module(const int64_t kernel_size[2], const int64_t stride[2],
                                const int64_t padding[2])
{
    return make("ct_max_pool2d_module", "MaxPool2d", max_pool_forward, kernel_size, stride, padding, true);
}

ct_module *ct_avg_pool2d_module(const int64_t kernel_size[2], const int64_t stride[2],
                                const int64_t padding[2], bool count_include_pad)
{
    return make("ct_avg_pool2d_module", "AvgPool2d", avg_pool_forward, kernel_size, stride, padding,
                count_include_pad);
}
