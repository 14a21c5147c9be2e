/* The fused attention kernels (attention.ct): the forward, and the backward's dk/dv and dq. All
 * take a multi-tensor buffer table (ct_kernel_buffer_count). */
#define CT_ATTENTION_KERNELS(X)                                                                  \
    CT_LIST_EACH_FLOAT(X, attention_forward) CT_LIST_EACH_HALF(X, attention_forward)             \
    CT_LIST_EACH_FLOAT(X, attention_backward_kv) CT_LIST_EACH_HALF(X, attention_backward_kv)     \
    CT_LIST_EACH_FLOAT(X, attention_backward_q) CT_LIST_EACH_HALF(X, attention_backward_q)
/* Rows each work item owns in the C build the CPU runs (a whole tile: see attention.ct); the
 * device builds give each item one. */
#define CT_ATTENTION_CPU_ROWS 16
