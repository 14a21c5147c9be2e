/* The row kernels (rows.ct): the triangles of the last two dims (tril, triu), cumulative sums,
 * stable sorts and small top-k selections along a dim (an item per row), and multinomial's
 * inverse-CDF search. */
#define CT_ROWS_KERNELS(X)                                                                       \
    CT_LIST_EACH_STORED_DTYPE(X, triangle) CT_LIST_EACH_FLOAT(X, cumsum) X(cumsum_i64)           \
    CT_LIST_EACH_HALF(X, cumsum) CT_LIST_EACH_STORED_DTYPE(X, sort_indices)                      \
    CT_LIST_EACH_STORED_DTYPE(X, topk_indices) X(multinomial_search_f64)
