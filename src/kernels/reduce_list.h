/* The reduce kernels (reduce.ct): two-pass reductions (<op>_partial, <op>_combine) and their
 * column-tile forms (<op>_tile), argmax/argmin, softmax/log_softmax (and their tile forms). Sums
 * combine in their accumulator types (float, double, long). */
/* Adjacent outputs per work item of the <op>_tile kernels (the host sizes launches by it). */
#define CT_REDUCE_TILE 16

#define CT_REDUCE_KERNELS(X)                                                                     \
    CT_LIST_EACH_DTYPE(X, sum_partial) CT_LIST_EACH_DTYPE(X, sum_tile)                           \
    X(sum_combine_f32) X(sum_combine_f64) X(sum_combine_i64)                                     \
    CT_LIST_EACH_DTYPE(X, max_partial) CT_LIST_EACH_DTYPE(X, max_tile)                           \
    CT_LIST_EACH_DTYPE(X, max_combine)                                                           \
    CT_LIST_EACH_DTYPE(X, min_partial) CT_LIST_EACH_DTYPE(X, min_tile)                           \
    CT_LIST_EACH_DTYPE(X, min_combine)                                                           \
    CT_LIST_EACH_FLOAT(X, var_partial) CT_LIST_EACH_FLOAT(X, var_tile)                           \
    CT_LIST_EACH_FLOAT(X, var_combine)                                                           \
    CT_LIST_EACH_NUMERIC(X, argmax) CT_LIST_EACH_NUMERIC(X, argmax_tile)                         \
    CT_LIST_EACH_NUMERIC(X, argmin) CT_LIST_EACH_NUMERIC(X, argmin_tile)                         \
    CT_LIST_EACH_FLOAT(X, softmax) CT_LIST_EACH_FLOAT(X, softmax_tile)                           \
    CT_LIST_EACH_FLOAT(X, log_softmax) CT_LIST_EACH_FLOAT(X, log_softmax_tile)
