/* Gradients of scatter (zero where replaced, src's gathered, at distinct targets), scatter_add, index_add and
 * masked_select by finite differences, on the CPU and every OpenCL device. */
#include "nn/nn_test.h"
#include "support/devices.h"
#include "support/gradcheck.h"

typedef struct context {
    ct_tensor *index, *rows, *mask;
} context;

static ct_tensor *f_scatter(ct_tensor *const *x, void *c) { return ct_scatter(x[0], 0, ((context *)c)->index, x[1]); }
static ct_tensor *f_scatter_add(ct_tensor *const *x, void *c) { return ct_scatter_add(x[0], 0, ((context *)c)->index, x[1]); }
static ct_tensor *f_scatter_add_t(ct_tensor *const *x, void *c)
{
    /* a transposed self, dim -1 */
    return ct_scatter_add(ct_transpose(x[0], 0, 1), -1, ((context *)c)->index, x[1]);
}
static ct_tensor *f_index_add(ct_tensor *const *x, void *c) { return ct_index_add(x[0], 0, ((context *)c)->rows, x[1], -1.5); }
static ct_tensor *f_masked_select(ct_tensor *const *x, void *c) { return ct_masked_select(x[0], ((context *)c)->mask); }

static void check_on(ct_device device)
{
    ct_scope_push();
    ct_manual_seed(5);
    ct_tensor *a = ct_to(ct_randn((int64_t[]){3, 4}, 2, CT_F64, CT_DEVICE_CPU), device);
    ct_tensor *src = ct_to(ct_randn((int64_t[]){2, 4}, 2, CT_F64, CT_DEVICE_CPU), device);
    ct_tensor *t = ct_to(ct_randn((int64_t[]){4, 3}, 2, CT_F64, CT_DEVICE_CPU), device);
    ct_tensor *rows = ct_to(ct_randn((int64_t[]){3, 4}, 2, CT_F64, CT_DEVICE_CPU), device);
    int64_t iv[8] = {2, 0, 2, 1, 2, 1, 0, 1}, rv[3] = {2, 0, 2};
    context c;
    c.index = ct_to(ct_tensor_from_data(iv, CT_I64, (int64_t[]){2, 4}, 2, CT_DEVICE_CPU), device);
    c.rows = ct_to(ct_tensor_from_data(rv, CT_I64, (int64_t[]){3}, 1, CT_DEVICE_CPU), device);
    c.mask = ct_gt_scalar(a, 0.0);
    /* scatter's src gradient is PyTorch's (gathered, so every duplicate gets it): distinct targets */
    context unique = c;
    int64_t uv[8] = {2, 0, 2, 1, 1, 1, 0, 0};
    unique.index = ct_to(ct_tensor_from_data(uv, CT_I64, (int64_t[]){2, 4}, 2, CT_DEVICE_CPU), device);
    ct_gradcheck("scatter", f_scatter, (ct_tensor *[]){a, src}, NULL, 2, &unique);
    ct_gradcheck("scatter_add", f_scatter_add, (ct_tensor *[]){a, src}, NULL, 2, &c);
    ct_gradcheck("scatter_add into a transposed view, dim -1", f_scatter_add_t, (ct_tensor *[]){t, src}, NULL, 2, &c);
    ct_gradcheck("index_add, alpha -1.5", f_index_add, (ct_tensor *[]){a, rows}, NULL, 2, &c);
    ct_gradcheck("masked_select", f_masked_select, &a, NULL, 1, &c);
    ct_scope_pop();
}

static void gradients_match_finite_differences(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) check_on(devices[d]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(gradients_match_finite_differences)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
