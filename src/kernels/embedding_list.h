/* The embedding kernels (embedding.ct): the rows (int64 and int32 indices); the counting sort
 * of the indices, then the weight's gradient row by row. */
#define CT_EMBEDDING_KERNELS(X)                                                                  \
    X(embedding_sort_i64) X(embedding_sort_i32)                                                  \
    CT_LIST_EACH_FLOAT(X, embedding_backward) CT_LIST_EACH_HALF(X, embedding_backward)           \
    CT_LIST_EACH_FLOAT(X, embedding_forward) CT_LIST_EACH_HALF(X, embedding_forward)             \
    CT_LIST_EACH_FLOAT(X, embedding_forward_idx32) CT_LIST_EACH_HALF(X, embedding_forward_idx32)
