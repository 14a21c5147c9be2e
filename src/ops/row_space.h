/* The row space of the row kernels (kernels/rows.ct): every dim of a tensor but `d`, strided per
 * operand, with the row length and the strides along the row. */
#ifndef CT_ROW_SPACE_H
#define CT_ROW_SPACE_H

#include "ops/ops_internal.h"

/* Fills p for rows along d of count tensors of one shape (tensors[0]'s): the index space over
 * the other dims, the offsets, l[0] = the row length, l[1] = tensors[1]'s stride along d and
 * l[2] = tensors[0]'s (1 for a 0-dim tensor, whose one element is a row of one). */
static inline void ct_row_space(ct_kparams *p, const ct_tensor *const *tensors, int count, int d)
{
    const ct_tensor *t = tensors[0];
    int64_t rows_shape[CT_MAX_DIMS];
    for (int k = 0; k < t->ndim; k++) rows_shape[k] = k == d ? 1 : t->shape[k];
    const int64_t *strides[CT_KERNEL_MAX_BUFFERS];
    for (int k = 0; k < count; k++) {
        strides[k] = tensors[k]->strides;
        p->off[k] = tensors[k]->offset;
    }
    ct_kparams_index_space(p, rows_shape, t->ndim, count, strides);
    bool row = t->ndim > 0;
    p->l[0] = row ? t->shape[d] : 1;
    p->l[1] = row ? tensors[1]->strides[d] : 1;
    p->l[2] = row ? tensors[0]->strides[d] : 1;
}

#endif
