/* The reduce kernels (reduce.ct): sum, max, min and var in two passes (<op>_partial or, for
 * column reductions, <op>_tile, then <op>_combine), argmax and argmin likewise. Sums combine in
 * their accumulator types (float, double, long); float16 and bfloat16 sums combine float
 * partials into their own dtype. */
#define CT_REDUCE_KERNELS(X)                                                                     \
    CT_LIST_EACH_STORED_DTYPE(X, sum_partial) CT_LIST_EACH_STORED_DTYPE(X, sum_tile)             \
    X(sum_combine_f32) X(sum_combine_f64) X(sum_combine_i64)                                     \
    X(sum_combine_f16) X(sum_combine_bf16)                                                       \
    CT_LIST_EACH_STORED_DTYPE(X, max_partial) CT_LIST_EACH_STORED_DTYPE(X, max_tile)             \
    CT_LIST_EACH_STORED_DTYPE(X, max_combine)                                                    \
    CT_LIST_EACH_STORED_DTYPE(X, min_partial) CT_LIST_EACH_STORED_DTYPE(X, min_tile)             \
    CT_LIST_EACH_STORED_DTYPE(X, min_combine)                                                    \
    CT_LIST_EACH_FLOAT(X, var_partial) CT_LIST_EACH_FLOAT(X, var_tile)                           \
    CT_LIST_EACH_FLOAT(X, var_combine)                                                           \
    CT_LIST_EACH_HALF(X, var_partial) CT_LIST_EACH_HALF(X, var_tile)                             \
    CT_LIST_EACH_HALF(X, var_combine)                                                            \
    CT_LIST_EACH_NUMERIC(X, argmax_partial) CT_LIST_EACH_NUMERIC(X, argmax_tile)                 \
    CT_LIST_EACH_NUMERIC(X, argmax_combine)                                                      \
    CT_LIST_EACH_NUMERIC(X, argmin_partial) CT_LIST_EACH_NUMERIC(X, argmin_tile)                 \
    CT_LIST_EACH_NUMERIC(X, argmin_combine)                                                      \
    CT_LIST_EACH_HALF(X, argmax_partial) CT_LIST_EACH_HALF(X, argmax_tile)                       \
    CT_LIST_EACH_HALF(X, argmax_combine)                                                         \
    CT_LIST_EACH_HALF(X, argmin_partial) CT_LIST_EACH_HALF(X, argmin_tile)                       \
    CT_LIST_EACH_HALF(X, argmin_combine)
