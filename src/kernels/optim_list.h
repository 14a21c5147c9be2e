/* The optimizer kernels (optim.ct): one step of SGD and of Adam/AdamW per parameter, in place,
 * over contiguous tensors; float32 and float64, then float16 and bfloat16. Flags in l[1] (see
 * optim.ct); l[0] = 1 marks the common case with no flag set, which the CPU launcher compiles as
 * a branch-free loop. */
#define CT_OPTIM_FLAG_WEIGHT_DECAY 1
#define CT_OPTIM_FLAG_NESTEROV 2
#define CT_OPTIM_FLAG_FIRST_STEP 4

#define CT_OPTIM_KERNELS(X)                                                                      \
    CT_LIST_EACH_FLOAT(X, sgd_step) CT_LIST_EACH_FLOAT(X, sgd_momentum_step)                     \
    CT_LIST_EACH_FLOAT(X, adam_moments) CT_LIST_EACH_FLOAT(X, adam_update)                       \
    CT_LIST_EACH_HALF(X, sgd_step) CT_LIST_EACH_HALF(X, sgd_momentum_step)                       \
    CT_LIST_EACH_HALF(X, adam_moments) CT_LIST_EACH_HALF(X, adam_update)
