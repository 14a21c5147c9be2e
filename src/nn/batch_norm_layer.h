/* BatchNorm1d / BatchNorm2d's insides, for the layers built on them: SyncBatchNorm
 * (src/distributed/sync_batch_norm.c) keeps a BatchNorm module's settings, tensors and checks, and
 * falls back to its forward when there is nothing to synchronise. */
#ifndef CT_NN_BATCH_NORM_LAYER_H
#define CT_NN_BATCH_NORM_LAYER_H

#include "nn/module_internal.h"

/* A BatchNorm module's data (ct_module_data). */
typedef struct ct_batch_norm_layer {
    int64_t num_features;
    int dims; /* 1 (BatchNorm1d: [N, C] or [N, C, L]) or 2 (BatchNorm2d: [N, C, H, W]) */
    ct_batch_norm_options options;
} ct_batch_norm_layer;

/* The forward of BatchNorm1d and BatchNorm2d modules: it tells a module made by ct_batch_norm1d or
 * ct_batch_norm2d from a custom module of the same kind. */
ct_tensor *ct_batch_norm_layer_forward(ct_module *self, const ct_tensor *x);
/* x's rank and channel count for the layer self (whose data is a ct_batch_norm_layer); records
 * CT_ERR_SHAPE naming both when they do not fit. */
ct_status ct_batch_norm_layer_check_input(const ct_module *self, const ct_tensor *x);
/* num_batches_tracked += 1 (no-op without the buffer); outside the graph. */
ct_status ct_batch_norm_layer_count_batch(ct_module *self);

#endif
