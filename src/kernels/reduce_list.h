/* The reduce kernels (reduce.ct): sum, max, min and var in two passes (<op>_partial or, for
 * column reductions, <op>_tile, then <op>_combine), argmax and argmin likewise. Sums combine in
 * their accumulator types (float, double, long). */
#define CT_REDUCE_KERNELS(X)                                                                     \
    CT_LIST_EACH_DTYPE(X, sum_partial) CT_LIST_EACH_DTYPE(X, sum_tile)                           \
    X(sum_combine_f32) X(sum_combine_f64) X(sum_combine_i64)                                     \
    CT_LIST_EACH_DTYPE(X, max_partial) CT_LIST_EACH_DTYPE(X, max_tile)                           \
    CT_LIST_EACH_DTYPE(X, max_combine)                                                           \
    CT_LIST_EACH_DTYPE(X, min_partial) CT_LIST_EACH_DTYPE(X, min_tile)                           \
    CT_LIST_EACH_DTYPE(X, min_combine)                                                           \
    CT_LIST_EACH_FLOAT(X, var_partial) CT_LIST_EACH_FLOAT(X, var_tile)                           \
    CT_LIST_EACH_FLOAT(X, var_combine)                                                           \
    CT_LIST_EACH_NUMERIC(X, argmax_partial) CT_LIST_EACH_NUMERIC(X, argmax_tile)                 \
    CT_LIST_EACH_NUMERIC(X, argmax_combine)                                                      \
    CT_LIST_EACH_NUMERIC(X, argmin_partial) CT_LIST_EACH_NUMERIC(X, argmin_tile)                 \
    CT_LIST_EACH_NUMERIC(X, argmin_combine)
