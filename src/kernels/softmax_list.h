/* The softmax kernels (softmax.ct): softmax and log_softmax along a dim, a group per row, and
 * their tile forms for rows side by side in memory. */
#define CT_SOFTMAX_KERNELS(X)                                                                    \
    CT_LIST_EACH_FLOAT(X, softmax) CT_LIST_EACH_FLOAT(X, softmax_tile)                           \
    CT_LIST_EACH_FLOAT(X, log_softmax) CT_LIST_EACH_FLOAT(X, log_softmax_tile)                   \
    CT_LIST_EACH_HALF(X, softmax) CT_LIST_EACH_HALF(X, softmax_tile)                             \
    CT_LIST_EACH_HALF(X, log_softmax) CT_LIST_EACH_HALF(X, log_softmax_tile)
