/* What the SyncBatchNorm tests share: the layers they convert, with weights and biases that tell
 * the channels apart. */
#ifndef CT_TEST_SYNC_BATCH_NORM_TEST_H
#define CT_TEST_SYNC_BATCH_NORM_TEST_H

#include "support/tensors.h"
#include "test_common.h"

static const ct_batch_norm_options BATCH_NORM_DEFAULTS = {.eps = 1e-5, .momentum = 0.1, .affine = true,
                                                          .track_running_stats = true};

/* A BatchNorm1d/2d with weight 1 + 0.25 c and bias 0.1 - 0.2 c (when affine). */
static inline ct_module *make_bn(int dims, int64_t channels, const ct_batch_norm_options *options)
{
    ct_module *m = dims == 1 ? ct_batch_norm1d(channels, options) : ct_batch_norm2d(channels, options);
    assert_non_null(m);
    if (!options->affine) return m;
    double w[16], b[16];
    for (int64_t c = 0; c < channels; c++) {
        w[c] = 1.0 + 0.25 * (double)c;
        b[c] = 0.1 - 0.2 * (double)c;
    }
    ct_tensor *weight = ct_module_parameter(m, "weight"), *bias = ct_module_parameter(m, "bias");
    ct_tensor *w32 = ct_test_tensor_from(w, CT_F64, &channels, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *b32 = ct_test_tensor_from(b, CT_F64, &channels, 1, CT_F32, CT_DEVICE_CPU);
    ct_no_grad_push();
    assert_int_equal(ct_copy_(weight, w32), CT_OK);
    assert_int_equal(ct_copy_(bias, b32), CT_OK);
    ct_no_grad_pop();
    ct_release(weight);
    ct_release(bias);
    ct_release(w32);
    ct_release(b32);
    return m;
}

#endif
