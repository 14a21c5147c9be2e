/* The random kernels (random.ct): uniform and normal floats, integers in a range. */
#define CT_RANDOM_KERNELS(X) CT_LIST_EACH_FLOAT(X, rand) CT_LIST_EACH_HALF(X, rand) \
    CT_LIST_EACH_FLOAT(X, randn) CT_LIST_EACH_HALF(X, randn) CT_LIST_EACH_STORED_DTYPE(X, randint)
