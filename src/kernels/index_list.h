/* The index kernels (index.ct): integer matmul, gather (int64 and int32 indices) and its
 * gradient (scatter_add, floating only; select_rows_backward for index_select along dim 0), index range checks, one-hot,
 * and scatter (the last matching position wins). */
#define CT_INDEX_KERNELS(X)                                                                      \
    X(matmul_i32) X(matmul_i64) X(matmul_u8)                                                     \
    CT_LIST_EACH_STORED_DTYPE(X, gather) CT_LIST_EACH_STORED_DTYPE(X, gather_idx32)              \
    CT_LIST_EACH_FLOAT(X, scatter_add) CT_LIST_EACH_FLOAT(X, scatter_add_idx32)                  \
    CT_LIST_EACH_HALF(X, scatter_add) CT_LIST_EACH_HALF(X, scatter_add_idx32)                    \
    CT_LIST_EACH_FLOAT(X, select_rows_backward) CT_LIST_EACH_FLOAT(X, select_rows_backward_idx32) \
    CT_LIST_EACH_HALF(X, select_rows_backward) CT_LIST_EACH_HALF(X, select_rows_backward_idx32)  \
    X(index_range_i32) X(index_range_i64) X(one_hot_i32) X(one_hot_i64)                         \
    CT_LIST_EACH_STORED_DTYPE(X, scatter) CT_LIST_EACH_STORED_DTYPE(X, scatter_idx32)
