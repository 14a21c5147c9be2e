/* Sequences made on their device: arange and linspace (kernels in kernels/fill.ct). */
#include <math.h>

#include "tensor/tensor_internal.h"

/* Sequences hold numbers; bool has none to step through (PyTorch refuses it too). */
static ct_status check_sequence_dtype(const char *function, ct_dtype dtype)
{
    if (!ct_dtype_is_valid(dtype))
        return ct_error(CT_ERR_DTYPE, "%s: dtype %d is not a ct_dtype", function, (int)dtype);
    if (dtype == CT_BOOL)
        return ct_error(CT_ERR_DTYPE, "%s: not supported for bool; use a numeric dtype", function);
    return CT_OK;
}

/* A contiguous tensor of n elements filled by one of the sequence kernels with s[0..2]. */
static ct_tensor *sequence(const char *function, const ct_kernel_id *kernels, int64_t n,
                           const double s[3], ct_dtype dtype, ct_device device)
{
    ct_tensor *t = ct_tensor_alloc(function, device, dtype, &n, 1);
    if (!t) return NULL;
    ct_kparams p = {0};
    p.n = n;
    p.off[0] = t->offset;
    for (int k = 0; k < 3; k++) p.s[k] = s[k];
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(t)};
    if (ct_backend_launch(t->storage->device, kernels[dtype], buffers, &p, 1) != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

static ct_tensor *arange(double start, double end, double step, ct_dtype dtype, ct_device device)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(arange);
    if (check_sequence_dtype("ct_arange", dtype) != CT_OK) return NULL;
    if (!isfinite(start) || !isfinite(end))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_arange: unsupported range %g -> %g; start "
                             "and end must be finite", start, end);
    if (!isfinite(step) || step == 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_arange: step %g is not allowed; step must "
                             "be finite and nonzero", step);
    if ((step > 0 && end < start) || (step < 0 && end > start))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_arange: upper bound and larger bound "
                             "inconsistent with step sign (start %g, end %g, step %g)", start, end, step);
    double size = ceil((end - start) / step);
    if (!(size < 9.2e18))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_arange: %g -> %g by %g has %g elements, "
                             "more than a tensor can hold", start, end, step, size);
    /* The values run monotonically from start to the last one: both ends must fit the dtype. */
    if (size > 0 && (ct_check_value_fits("ct_arange", "start", start, dtype) != CT_OK ||
                     ct_check_value_fits("ct_arange", "the last value", start + (size - 1) * step,
                                         dtype) != CT_OK))
        return NULL;
    const double s[3] = {start, step, 0};
    return sequence("ct_arange", kernels, (int64_t)size, s, dtype, device);
}

ct_tensor *ct_arange(double start, double end, double step, ct_dtype dtype, ct_device device)
{
    CT_API_ENTER;
    return ct_api_return(arange(start, end, step, dtype, device));
}

static ct_tensor *linspace(double start, double end, int64_t steps, ct_dtype dtype, ct_device device)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(linspace);
    if (check_sequence_dtype("ct_linspace", dtype) != CT_OK) return NULL;
    if (steps < 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_linspace: number of steps %lld is negative; "
                             "it must be >= 0", (long long)steps);
    if (steps > 0 && ct_check_value_fits("ct_linspace", "start", start, dtype) != CT_OK) return NULL;
    if (steps > 1 && ct_check_value_fits("ct_linspace", "end", end, dtype) != CT_OK) return NULL;
    /* One step gives start: the kernel's second half counts back from s[1], so pass start there. */
    const double s[3] = {start, steps == 1 ? start : end, steps > 1 ? (end - start) / (double)(steps - 1) : 0};
    return sequence("ct_linspace", kernels, steps, s, dtype, device);
}

ct_tensor *ct_linspace(double start, double end, int64_t steps, ct_dtype dtype, ct_device device)
{
    CT_API_ENTER;
    return ct_api_return(linspace(start, end, steps, dtype, device));
}
