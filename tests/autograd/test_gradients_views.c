/* Finite-difference checks of the views' gradients (reshape, view, flatten, squeeze, unsqueeze,
 * transpose, permute, expand, narrow, slice, select, chunk, split), on the CPU and on every
 * OpenCL device, over negative dims, non-contiguous inputs and reshapes that must copy. */
#include "support/gradcheck.h"
#include "test_common.h"

static ct_tensor *f_reshape(ct_tensor *const *x, void *c) { (void)c; return ct_reshape(x[0], (int64_t[]){4, -1}, 2); }
static ct_tensor *f_view(ct_tensor *const *x, void *c) { (void)c; return ct_view(x[0], (int64_t[]){6, 2, 2}, 3); }
/* A transposed input cannot be seen in the new shape: the reshape copies. */
static ct_tensor *f_reshape_copy(ct_tensor *const *x, void *c)
{
    (void)c;
    return ct_reshape(ct_transpose(x[0], 0, 2), (int64_t[]){-1}, 1);
}
static ct_tensor *f_flatten(ct_tensor *const *x, void *c) { (void)c; return ct_flatten(x[0], 1, -1); }
static ct_tensor *f_flatten_transposed(ct_tensor *const *x, void *c)
{
    (void)c;
    return ct_flatten(ct_transpose(x[0], 0, 1), 0, 1);
}
static ct_tensor *f_squeeze(ct_tensor *const *x, void *c) { (void)c; return ct_squeeze(x[0]); }
static ct_tensor *f_squeeze_dim(ct_tensor *const *x, void *c) { (void)c; return ct_squeeze_dim(x[0], -2); }
static ct_tensor *f_unsqueeze(ct_tensor *const *x, void *c) { (void)c; return ct_unsqueeze(x[0], -1); }
static ct_tensor *f_transpose(ct_tensor *const *x, void *c) { (void)c; return ct_transpose(x[0], 0, -1); }
static ct_tensor *f_permute(ct_tensor *const *x, void *c) { (void)c; return ct_permute(x[0], (int[]){2, 0, -2}, 3); }
/* Expanding [3, 1] to [2, 3, 4]: a new leading dim and a size-1 dim that grows. */
static ct_tensor *f_expand(ct_tensor *const *x, void *c) { (void)c; return ct_expand(x[0], (int64_t[]){2, -1, 4}, 3); }
/* The expanded view times a tensor, so that each expanded element has its own weight. */
static ct_tensor *f_expand_mul(ct_tensor *const *x, void *c)
{
    (void)c;
    return ct_mul(ct_expand(x[0], (int64_t[]){2, 3, 4}, 3), x[1]);
}
static ct_tensor *f_narrow(ct_tensor *const *x, void *c) { (void)c; return ct_narrow(x[0], -1, -3, 2); }
static ct_tensor *f_slice(ct_tensor *const *x, void *c) { (void)c; return ct_slice(x[0], 1, -4, 100, 2); }
static ct_tensor *f_select(ct_tensor *const *x, void *c) { (void)c; return ct_select(x[0], -2, -1); }
/* A part of a transposed view. */
static ct_tensor *f_slice_of_transposed(ct_tensor *const *x, void *c)
{
    (void)c;
    return ct_slice(ct_transpose(x[0], 1, 2), 2, 1, 3, 1);
}
/* The same input through two overlapping parts: the gradients add up. */
static ct_tensor *f_overlapping_parts(ct_tensor *const *x, void *c)
{
    (void)c;
    return ct_mul(ct_narrow(x[0], 1, 0, 3), ct_narrow(x[0], 1, 1, 3));
}
/* chunk of [7, 2] into 3 along dim 0: parts of 3, 3 and 1 rows. */
static ct_tensor *f_chunk(ct_tensor *const *x, void *c)
{
    (void)c;
    ct_tensor *parts[4];
    int count = 0;
    if (ct_chunk(x[0], 3, 0, parts, 4, &count) != CT_OK || count != 3) return NULL;
    return ct_add(ct_mul(parts[0], parts[1]), parts[2]);
}
/* split of [3, 5] by 2 along dim -1: parts of 2, 2 and 1 columns; the middle one unused. */
static ct_tensor *f_split(ct_tensor *const *x, void *c)
{
    (void)c;
    ct_tensor *parts[3];
    int count = 0;
    if (ct_split(x[0], 2, -1, parts, 3, &count) != CT_OK || count != 3) return NULL;
    return ct_mul(parts[0], parts[2]);
}
/* A chain of views: unsqueeze, expand, permute, reshape, select. */
static ct_tensor *f_chain(ct_tensor *const *x, void *c)
{
    (void)c;
    ct_tensor *wide = ct_expand(ct_unsqueeze(x[0], 0), (int64_t[]){2, 3, 4}, 3);
    ct_tensor *turned = ct_permute(wide, (int[]){1, 2, 0}, 3);
    return ct_select(ct_reshape(turned, (int64_t[]){3, 8}, 2), 0, 1);
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

static void check_on(ct_device device)
{
    ct_scope_push();
    ct_manual_seed(11);
    ct_tensor *t234 = input(device, (int64_t[]){2, 3, 4}, 3);
    ct_tensor *t2113 = input(device, (int64_t[]){2, 1, 1, 3}, 4);
    ct_tensor *t31 = input(device, (int64_t[]){3, 1}, 2);
    ct_tensor *t72 = input(device, (int64_t[]){7, 2}, 2);
    ct_tensor *t35 = input(device, (int64_t[]){3, 5}, 2);
    ct_tensor *t34 = input(device, (int64_t[]){3, 4}, 2);
    ct_gradcheck("reshape [2,3,4] -> [4,-1]", f_reshape, &t234, NULL, 1, NULL);
    ct_gradcheck("view [2,3,4] -> [6,2,2]", f_view, &t234, NULL, 1, NULL);
    ct_gradcheck("reshape of a transposed view (a copy)", f_reshape_copy, &t234, NULL, 1, NULL);
    ct_gradcheck("flatten dims 1..-1", f_flatten, &t234, NULL, 1, NULL);
    ct_gradcheck("flatten of a transposed view", f_flatten_transposed, &t234, NULL, 1, NULL);
    ct_gradcheck("squeeze [2,1,1,3]", f_squeeze, &t2113, NULL, 1, NULL);
    ct_gradcheck("squeeze dim -2", f_squeeze_dim, &t2113, NULL, 1, NULL);
    ct_gradcheck("unsqueeze dim -1", f_unsqueeze, &t234, NULL, 1, NULL);
    ct_gradcheck("transpose 0, -1", f_transpose, &t234, NULL, 1, NULL);
    ct_gradcheck("permute 2, 0, -2", f_permute, &t234, NULL, 1, NULL);
    ct_gradcheck("expand [3,1] -> [2,-1,4]", f_expand, &t31, NULL, 1, NULL);
    ct_tensor *expand_mul[2] = {t31, t234};
    ct_gradcheck("expand times a tensor", f_expand_mul, expand_mul, NULL, 2, NULL);
    ct_gradcheck("narrow dim -1 from -3", f_narrow, &t234, NULL, 1, NULL);
    ct_gradcheck("slice dim 1 from -4 by 2", f_slice, &t35, NULL, 1, NULL);
    ct_gradcheck("select dim -2 index -1", f_select, &t234, NULL, 1, NULL);
    ct_gradcheck("slice of a transposed view", f_slice_of_transposed, &t234, NULL, 1, NULL);
    ct_gradcheck("overlapping narrows", f_overlapping_parts, &t34, NULL, 1, NULL);
    ct_gradcheck("chunk into 3", f_chunk, &t72, NULL, 1, NULL);
    ct_gradcheck("split by 2 along -1", f_split, &t35, NULL, 1, NULL);
    ct_gradcheck("unsqueeze, expand, permute, reshape, select", f_chain, &t34, NULL, 1, NULL);
    ct_scope_pop();
}

static void view_gradients_on_the_cpu(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
}

static void view_gradients_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) check_on((ct_device){CT_OPENCL, i});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(view_gradients_on_the_cpu),
        cmocka_unit_test(view_gradients_on_opencl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
