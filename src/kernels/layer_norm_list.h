/* The layer normalisation kernels (layer_norm.ct): the forward, a group per row; the backward,
 * a group per chunk of rows, and the combine of the weight's and bias's gradients. */
#define CT_LAYER_NORM_KERNELS(X)                                                                 \
    CT_LIST_EACH_FLOAT(X, layer_norm) CT_LIST_EACH_FLOAT(X, layer_norm_backward)                 \
    CT_LIST_EACH_FLOAT(X, layer_norm_backward_combine)                                           \
    CT_LIST_EACH_HALF(X, layer_norm) CT_LIST_EACH_HALF(X, layer_norm_backward)                   \
    CT_LIST_EACH_HALF(X, layer_norm_backward_combine)
