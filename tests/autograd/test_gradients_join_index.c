/* Finite-difference checks of the gradients of cat, stack, index_select and gather, on the CPU
 * and on every OpenCL device: negative dims, repeated indices, int32 and int64 indices,
 * non-contiguous inputs and indices, gather with an index smaller than its input. */
#include "support/gradcheck.h"
#include "test_common.h"

/* The index tensors of a check, by name, on the check's device. */
typedef struct indices {
    ct_tensor *rows;      /* [5] int64: 3, 0, 3, 3, 1 (repeats, and row 2 never picked) */
    ct_tensor *rows32;    /* the same, int32 */
    ct_tensor *strided;   /* every other element of [8] int64: 2, 0, 2, 1 */
    ct_tensor *scalar;    /* 0-d int64: 1 */
    ct_tensor *gather1;   /* [3, 5] int64 into dim 1 of a [3, 4] */
    ct_tensor *gather_small; /* [2, 2] int32 into dim 0 of a [3, 4]: smaller in dim 1 */
    ct_tensor *gather_t;  /* [5, 3] int64, transposed to [3, 5], into dim -1 of a [3, 4] */
} indices;

static ct_tensor *f_cat(ct_tensor *const *x, void *c) { (void)c; return ct_cat((const ct_tensor *const *)x, 3, -1); }
static ct_tensor *f_cat_rows(ct_tensor *const *x, void *c) { (void)c; return ct_cat((const ct_tensor *const *)x, 2, 0); }
static ct_tensor *f_stack(ct_tensor *const *x, void *c) { (void)c; return ct_stack((const ct_tensor *const *)x, 3, 0); }
static ct_tensor *f_stack_last(ct_tensor *const *x, void *c) { (void)c; return ct_stack((const ct_tensor *const *)x, 3, -1); }
/* cat of a transposed view with a tensor. */
static ct_tensor *f_cat_transposed(ct_tensor *const *x, void *c)
{
    (void)c;
    const ct_tensor *parts[2] = {ct_transpose(x[0], 0, 1), x[1]};
    return ct_cat(parts, 2, 1);
}
static ct_tensor *f_index_select0(ct_tensor *const *x, void *c) { return ct_index_select(x[0], 0, ((indices *)c)->rows); }
static ct_tensor *f_index_select32(ct_tensor *const *x, void *c) { return ct_index_select(x[0], -2, ((indices *)c)->rows32); }
static ct_tensor *f_index_select_last(ct_tensor *const *x, void *c) { return ct_index_select(x[0], -1, ((indices *)c)->strided); }
static ct_tensor *f_index_select_scalar(ct_tensor *const *x, void *c) { return ct_index_select(x[0], 1, ((indices *)c)->scalar); }
/* index_select of a transposed view. */
static ct_tensor *f_index_select_view(ct_tensor *const *x, void *c)
{
    return ct_index_select(ct_transpose(x[0], 0, 1), 1, ((indices *)c)->rows);
}
static ct_tensor *f_gather1(ct_tensor *const *x, void *c) { return ct_gather(x[0], 1, ((indices *)c)->gather1); }
static ct_tensor *f_gather_small(ct_tensor *const *x, void *c) { return ct_gather(x[0], 0, ((indices *)c)->gather_small); }
static ct_tensor *f_gather_strided(ct_tensor *const *x, void *c) { return ct_gather(x[0], -1, ((indices *)c)->gather_t); }
/* gather from a transposed view ([4, 3] seen as [3, 4]). */
static ct_tensor *f_gather_view(ct_tensor *const *x, void *c)
{
    return ct_gather(ct_transpose(x[0], 0, 1), 1, ((indices *)c)->gather1);
}

static ct_tensor *input(ct_device device, const int64_t *shape, int ndim)
{
    ct_tensor *r = ct_rand(shape, ndim, CT_F64, CT_DEVICE_CPU);
    ct_tensor *shifted = ct_add_scalar(r, 0.5);
    ct_tensor *out = ct_to(shifted, device);
    ct_release(shifted);
    ct_release(r);
    return out;
}

static ct_tensor *index_of(const void *values, ct_dtype dtype, const int64_t *shape, int ndim, ct_device device)
{
    return ct_tensor_from_data(values, dtype, shape, ndim, device);
}

static void check_on(ct_device device)
{
    ct_scope_push();
    ct_manual_seed(5);
    ct_tensor *a23 = input(device, (int64_t[]){2, 3}, 2), *a21 = input(device, (int64_t[]){2, 1}, 2);
    ct_tensor *a22 = input(device, (int64_t[]){2, 2}, 2), *b23 = input(device, (int64_t[]){2, 3}, 2);
    ct_tensor *c23 = input(device, (int64_t[]){2, 3}, 2), *a32 = input(device, (int64_t[]){3, 2}, 2);
    ct_tensor *three[3] = {a23, a21, a22}, *rows[2] = {a23, b23}, *same[3] = {a23, b23, c23};
    ct_gradcheck("cat [2,3],[2,1],[2,2] along -1", f_cat, three, NULL, 3, NULL);
    ct_gradcheck("cat along 0", f_cat_rows, rows, NULL, 2, NULL);
    bool middle_constant[3] = {false, true, false};
    ct_gradcheck("cat with a constant input", f_cat, three, middle_constant, 3, NULL);
    ct_gradcheck("stack along 0", f_stack, same, NULL, 3, NULL);
    ct_gradcheck("stack along -1", f_stack_last, same, NULL, 3, NULL);
    ct_tensor *transposed[2] = {a32, a23};
    ct_gradcheck("cat of a transposed view", f_cat_transposed, transposed, NULL, 2, NULL);

    const int64_t rows_values[5] = {3, 0, 3, 3, 1};
    const int32_t rows32_values[5] = {3, 0, 3, 3, 1};
    const int64_t strided_values[8] = {2, 9, 0, 9, 2, 9, 1, 9};
    const int64_t one = 1;
    const int64_t gather1_values[15] = {0, 3, 3, 1, 0, 2, 2, 2, 0, 1, 3, 3, 3, 3, 0};
    const int32_t small_values[4] = {2, 0, 2, 2};
    const int64_t gather_t_values[15] = {1, 0, 3, 1, 2, 3, 0, 0, 3, 1, 1, 2, 3, 3, 0};
    ct_tensor *every8 = index_of(strided_values, CT_I64, (int64_t[]){8}, 1, device);
    ct_tensor *g53 = index_of(gather_t_values, CT_I64, (int64_t[]){5, 3}, 2, device);
    indices ix = {
        .rows = index_of(rows_values, CT_I64, (int64_t[]){5}, 1, device),
        .rows32 = index_of(rows32_values, CT_I32, (int64_t[]){5}, 1, device),
        .strided = ct_slice(every8, 0, 0, 8, 2),
        .scalar = index_of(&one, CT_I64, NULL, 0, device),
        .gather1 = index_of(gather1_values, CT_I64, (int64_t[]){3, 5}, 2, device),
        .gather_small = index_of(small_values, CT_I32, (int64_t[]){2, 2}, 2, device),
        .gather_t = ct_transpose(g53, 0, 1),
    };
    ct_tensor *m43 = input(device, (int64_t[]){4, 3}, 2), *m34 = input(device, (int64_t[]){3, 4}, 2);
    ct_tensor *m243 = input(device, (int64_t[]){2, 4, 3}, 3);
    ct_gradcheck("index_select dim 0, repeated rows", f_index_select0, &m43, NULL, 1, &ix);
    ct_gradcheck("index_select dim -2, int32 index", f_index_select32, &m243, NULL, 1, &ix);
    ct_gradcheck("index_select dim -1, strided index", f_index_select_last, &m43, NULL, 1, &ix);
    ct_gradcheck("index_select with a 0-d index", f_index_select_scalar, &m43, NULL, 1, &ix);
    ct_gradcheck("index_select of a transposed view", f_index_select_view, &m43, NULL, 1, &ix);
    ct_gradcheck("gather dim 1, index wider than the input", f_gather1, &m34, NULL, 1, &ix);
    ct_gradcheck("gather dim 0, smaller int32 index", f_gather_small, &m34, NULL, 1, &ix);
    ct_gradcheck("gather dim -1, transposed index", f_gather_strided, &m34, NULL, 1, &ix);
    ct_gradcheck("gather from a transposed view", f_gather_view, &m43, NULL, 1, &ix);
    ct_scope_pop();
}

static void join_and_index_gradients_on_the_cpu(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
}

static void join_and_index_gradients_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) check_on((ct_device){CT_OPENCL, i});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(join_and_index_gradients_on_the_cpu),
        cmocka_unit_test(join_and_index_gradients_on_opencl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
