/* Multi-tensor launches and the list operations built on them (see multi_tensor.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "ops/multi_tensor.h"

/* ct_multi_tensor_launch, with record (when not NULL) as buffer 8 at offset p->stride[1][0]: a
 * float64 record on the device that the kernel reads (roles 1, up to 8 tensors). */
static ct_status launch_with_record(ct_kernel_id kernel, ct_tensor *operands[][CT_MULTI_MAX_ROLES], int tensors,
                                    int roles, const ct_tensor *record, ct_kparams *p)
{
    if (tensors < 1 || tensors > CT_MULTI_MAX_TENSORS || roles < 1 || roles > CT_MULTI_MAX_ROLES ||
        tensors * roles > CT_KERNEL_WIDE_BUFFERS)
        return ct_error(CT_ERR_INTERNAL, "multi-tensor launch: %d tensors of %d roles do not fit the "
                        "%d buffers of a launch", tensors, roles, CT_KERNEL_WIDE_BUFFERS);
    void *buffers[CT_KERNEL_WIDE_BUFFERS] = {0};
    long n = 0;
    for (int t = 0; t < tensors; t++) {
        n += (long)ct_numel(operands[t][0]);
        p->size[t] = n;
        for (int r = 0; r < roles; r++) {
            int k = t * roles + r;
            buffers[k] = ct_tensor_handle(operands[t][r]);
            p->stride[k / 8][k % 8] = operands[t][r]->offset;
        }
    }
    if (record) {
        buffers[CT_MULTI_MAX_TENSORS] = ct_tensor_handle(record);
        p->stride[1][0] = record->offset;
    }
    if (n == 0) return CT_OK;
    p->n = n;
    p->ndim = tensors;
    p->l[0] = p->l[1] == 0; /* the branch-free common case (see optim.ct) */
    p->l[2] = roles;
    return ct_backend_launch(operands[0][0]->storage->device, kernel, buffers, p, roles);
}

ct_status ct_multi_tensor_launch(ct_kernel_id kernel, ct_tensor *operands[][CT_MULTI_MAX_ROLES], int tensors,
                                 int roles, ct_kparams *p)
{
    return launch_with_record(kernel, operands, tensors, roles, NULL, p);
}

static bool same_kind(const ct_tensor *a, const ct_tensor *b)
{
    return ct_device_equal(a->storage->device, b->storage->device) && a->dtype == b->dtype;
}

/* Contiguous forms of the non-empty floating tensors of the list, into work (new references);
 * their count into *kept. */
static ct_status contiguous_forms(const char *function, ct_tensor *const *tensors, int64_t count,
                                  ct_tensor **work, ct_tensor **originals, int64_t *kept)
{
    *kept = 0;
    for (int64_t i = 0; i < count; i++) {
        ct_tensor *t = tensors[i];
        if (!t || ct_numel(t) == 0) continue;
        if (!ct_dtype_is_floating(t->dtype))
            return ct_error(CT_ERR_DTYPE, "%s: tensor %lld is %s; a float32 or float64 tensor was "
                            "expected", function, (long long)i, ct_dtype_name(t->dtype));
        ct_tensor *c = ct_contiguous(t);
        if (!c) return ct_last_error();
        work[*kept] = c;
        originals[*kept] = t;
        ++*kept;
    }
    return CT_OK;
}

ct_status ct_multi_tensor_scale_(ct_tensor *const *tensors, int64_t count, double factor,
                                const ct_tensor *factor_record)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_DTYPE(multi_scale);
    size_t slots = count > 0 ? (size_t)count : 1;
    ct_tensor **work = calloc(slots, sizeof *work), **originals = calloc(slots, sizeof *originals);
    bool *done = calloc(slots, sizeof *done);
    int64_t kept = 0;
    ct_status status = work && originals && done
                           ? contiguous_forms("scaling tensors", tensors, count, work, originals, &kept)
                           : ct_error(CT_ERR_OUT_OF_MEMORY, "scaling tensors: no host memory");
    for (int64_t i = 0; status == CT_OK && i < kept; i++) {
        if (done[i]) continue;
        ct_tensor *operands[CT_MULTI_MAX_TENSORS][CT_MULTI_MAX_ROLES] = {{0}};
        int size = 0;
        for (int64_t j = i; j < kept && size < CT_MULTI_MAX_TENSORS; j++)
            if (!done[j] && same_kind(work[i], work[j])) {
                operands[size++][0] = work[j];
                done[j] = true;
            }
        ct_kparams p = {0};
        p.s[0] = factor;
        if (factor_record) p.l[1] = CT_OPTIM_FLAG_FACTOR_RECORD;
        status = launch_with_record(kernels[work[i]->dtype], operands, size, 1, factor_record, &p);
    }
    for (int64_t i = 0; i < kept; i++) {
        if (status == CT_OK && work[i] != originals[i]) status = ct_copy_(originals[i], work[i]);
        ct_release(work[i]);
    }
    free(work), free(originals), free(done);
    return status;
}

static double combine(double total, double part, int mode)
{
    if (mode != CT_MULTI_MAX_ABS) return total + part;
    return part > total || isnan(part) || isnan(total) ? (isnan(total) ? total : part) : total;
}

/* The partials of the tensors of one device and dtype (list[0..n)), in one new float64 buffer (the
 * squares of float32 values near 1e30 overflow float32): a launch per 8 tensors. */
static ct_tensor *partial_sums(ct_tensor *const *list, int64_t n, int mode, double power)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_DTYPE(multi_power_sum);
    const ct_tensor *first = list[0];
    /* 16-bit partial sums would overflow and lose the small terms */
    if (kernels[first->dtype] == CT_K_NONE)
        return ct_error_null(CT_ERR_DTYPE, "norms and inf checks of %s gradients are not supported: keep "
                             "float32 (or float64) parameters, and let autocast run the ops in 16 bits",
                             ct_dtype_name(first->dtype));
    int64_t items = 0;
    for (int64_t i = 0; i < n; i++) items += (ct_numel(list[i]) + CT_MULTI_SUM_ITEM - 1) / CT_MULTI_SUM_ITEM;
    ct_tensor *partials = ct_empty(&items, 1, CT_F64, first->storage->device);
    if (!partials) return NULL;
    void *buffers[CT_KERNEL_WIDE_BUFFERS] = {0};
    ct_status status = CT_OK;
    int64_t start = 0;
    for (int64_t i = 0; status == CT_OK && i < n; i += CT_MULTI_MAX_TENSORS) {
        ct_kparams p = {0};
        int size = n - i < CT_MULTI_MAX_TENSORS ? (int)(n - i) : CT_MULTI_MAX_TENSORS;
        long launch_items = 0;
        for (int t = 0; t < size; t++) {
            const ct_tensor *x = list[i + t];
            launch_items += (long)((ct_numel(x) + CT_MULTI_SUM_ITEM - 1) / CT_MULTI_SUM_ITEM);
            p.size[t] = launch_items;
            buffers[t] = ct_tensor_handle(x);
            p.stride[0][t] = x->offset;
            p.stride[2][t] = (long)ct_numel(x);
        }
        buffers[CT_MULTI_MAX_TENSORS] = ct_tensor_handle(partials);
        p.stride[1][0] = partials->offset + start;
        p.n = launch_items;
        p.ndim = size;
        p.l[1] = mode;
        p.s[0] = power;
        status = ct_backend_launch(first->storage->device, kernels[first->dtype], buffers, &p, CT_MULTI_SUM_ITEM);
        start += launch_items;
    }
    if (status == CT_OK) return partials;
    ct_release(partials);
    return NULL;
}

/* The partials of list[0..n) (one device and dtype), read once and added into *total. */
static ct_status power_sum_group(ct_tensor *const *list, int64_t n, int mode, double power, double *total)
{
    ct_tensor *partials = partial_sums(list, n, mode, power);
    if (!partials) return ct_last_error();
    int64_t items = ct_numel(partials);
    size_t bytes = (size_t)items * ct_dtype_size(partials->dtype);
    void *values = malloc(bytes);
    ct_status status = values ? ct_tensor_to_array(partials, values, bytes)
                              : ct_error(CT_ERR_OUT_OF_MEMORY, "power sum: no host memory");
    for (int64_t k = 0; status == CT_OK && k < items; k++) {
        double part = partials->dtype == CT_F32 ? (double)((const float *)values)[k] : ((const double *)values)[k];
        *total = combine(*total, part, mode);
    }
    free(values);
    ct_release(partials);
    return status;
}

ct_status ct_multi_tensor_power_sum(ct_tensor *const *tensors, int64_t count, int mode, double power,
                                    double *out)
{
    *out = 0.0;
    size_t slots = count > 0 ? (size_t)count : 1;
    ct_tensor **work = calloc(slots, sizeof *work), **originals = calloc(slots, sizeof *originals);
    ct_tensor **group = calloc(slots, sizeof *group);
    bool *done = calloc(slots, sizeof *done);
    int64_t kept = 0;
    ct_status status = work && originals && group && done
                           ? contiguous_forms("power sum", tensors, count, work, originals, &kept)
                           : ct_error(CT_ERR_OUT_OF_MEMORY, "power sum: no host memory");
    for (int64_t i = 0; status == CT_OK && i < kept; i++) {
        if (done[i]) continue;
        int64_t n = 0;
        for (int64_t j = i; j < kept; j++)
            if (!done[j] && same_kind(work[i], work[j])) {
                group[n++] = work[j];
                done[j] = true;
            }
        status = power_sum_group(group, n, mode, power, out);
    }
    for (int64_t i = 0; i < kept; i++) ct_release(work[i]);
    free(work), free(originals), free(group), free(done);
    return status;
}

bool ct_multi_tensor_one_kind(ct_tensor *const *tensors, int64_t count)
{
    const ct_tensor *first = NULL;
    for (int64_t i = 0; i < count; i++) {
        if (!tensors[i] || ct_numel(tensors[i]) == 0) continue;
        if (first && !same_kind(first, tensors[i])) return false;
        if (!first) first = tensors[i];
    }
    return first != NULL;
}

ct_tensor *ct_multi_tensor_clip_record(ct_tensor *const *tensors, int64_t count, int mode, double power,
                                       double max_norm)
{
    size_t slots = count > 0 ? (size_t)count : 1;
    ct_tensor **work = calloc(slots, sizeof *work), **originals = calloc(slots, sizeof *originals);
    int64_t kept = 0;
    ct_status status = work && originals ? contiguous_forms("clipping record", tensors, count, work, originals, &kept)
                                         : ct_error(CT_ERR_OUT_OF_MEMORY, "clipping record: no host memory");
    if (status == CT_OK && (kept == 0 || !ct_multi_tensor_one_kind(work, kept)))
        status = ct_error(CT_ERR_INTERNAL, "clipping record: the tensors are not of one device and dtype");
    ct_tensor *level = status == CT_OK ? partial_sums(work, kept, mode, power) : NULL;
    /* folded CT_MULTI_SUM_ITEM to an item, level by level, down to the record of one item */
    while (level) {
        int64_t in = ct_numel(level), items = (in + CT_MULTI_SUM_ITEM - 1) / CT_MULTI_SUM_ITEM;
        int64_t shape = items > 1 ? items : 2;
        ct_tensor *out = ct_empty(&shape, 1, CT_F64, level->storage->device);
        ct_kparams p = {0};
        p.n = (long)items;
        p.l[1] = mode;
        p.l[2] = (long)in;
        p.l[3] = items == 1;
        p.s[0] = max_norm;
        p.s[1] = power;
        p.off[0] = level->offset;
        p.off[1] = out ? out->offset : 0;
        void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(level), out ? ct_tensor_handle(out) : NULL};
        status = out ? ct_backend_launch(level->storage->device, CT_K_norm_fold_f64, buffers, &p, CT_MULTI_SUM_ITEM)
                     : ct_last_error();
        ct_release(level);
        level = status == CT_OK ? out : (ct_release(out), NULL);
        if (level && items == 1) break;
    }
    for (int64_t i = 0; i < kept; i++) ct_release(work[i]);
    free(work), free(originals);
    return level;
}
