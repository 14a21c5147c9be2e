/* The batch normalisation kernels (batch_norm.ct): statistics, running statistics,
 * coefficients, normalisation, backward. float32 and float64, float16 and bfloat16. */
#define CT_BATCH_NORM_KERNELS(X)                                                                 \
    CT_LIST_EACH_FLOAT(X, batch_norm_stats) CT_LIST_EACH_FLOAT(X, batch_norm_stats_combine)      \
    CT_LIST_EACH_FLOAT(X, batch_norm_update_running)                                             \
    CT_LIST_EACH_FLOAT(X, batch_norm_coeffs) CT_LIST_EACH_FLOAT(X, batch_norm_apply)             \
    CT_LIST_EACH_FLOAT(X, batch_norm_backward_reduce)                                            \
    CT_LIST_EACH_FLOAT(X, batch_norm_backward_combine)                                           \
    CT_LIST_EACH_FLOAT(X, batch_norm_backward_input)                                             \
    CT_LIST_EACH_HALF(X, batch_norm_stats) CT_LIST_EACH_HALF(X, batch_norm_stats_combine)        \
    CT_LIST_EACH_HALF(X, batch_norm_update_running)                                              \
    CT_LIST_EACH_HALF(X, batch_norm_coeffs) CT_LIST_EACH_HALF(X, batch_norm_apply)               \
    CT_LIST_EACH_HALF(X, batch_norm_backward_reduce)                                             \
    CT_LIST_EACH_HALF(X, batch_norm_backward_combine)                                            \
    CT_LIST_EACH_HALF(X, batch_norm_backward_input)
