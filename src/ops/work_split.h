/* How the ops split a reduction into work-groups, from the device's work shape (see
 * ct_work_shape): the kernels are the same on every device, the split is not. */
#ifndef CT_WORK_SPLIT_H
#define CT_WORK_SPLIT_H

#include "backend/backend.h"

/* A reduction of M outputs over K elements each, as groups: each output's K elements in P chunks
 * of `chunk` (the last may be shorter), a group of group_size items per chunk (per chunk of a
 * tile of tile_width adjacent outputs, in a column reduction); when P > 1 a second pass folds
 * each output's P partials in groups of combine_group_size. */
typedef struct ct_reduce_split {
    int group_size;
    long chunks;          /* P */
    long chunk;           /* reduced elements per group */
    long tile_width;      /* outputs per group of a column reduction (1 for rows) */
    int combine_group_size;
} ct_reduce_split;

/* Rows: each output's reduced elements lie along a row (a sum over the last dim, or over all). */
ct_status ct_split_rows(ct_device device, int64_t outputs, int64_t count, ct_reduce_split *split);
/* Columns: adjacent outputs are adjacent in memory, their reduced elements strided (a sum over
 * dim 0 of [N, C]); a group takes a tile of tile_width outputs. */
ct_status ct_split_columns(ct_device device, int64_t outputs, int64_t count, ct_reduce_split *split);
/* One group per row of `length` elements (softmax, cross-entropy): the group size. */
ct_status ct_split_row_groups(ct_device device, int64_t length, int *group_size);

#endif
