/* Finite-difference checks of add, sub, mul, div (with broadcasting), sum, mean and matmul, on
 * the CPU and on every OpenCL device. */
#include "support/gradcheck.h"
#include "test_common.h"

static ct_tensor *f_add(ct_tensor *const *x, void *c) { (void)c; return ct_add(x[0], x[1]); }
static ct_tensor *f_sub(ct_tensor *const *x, void *c) { (void)c; return ct_sub(x[0], x[1]); }
static ct_tensor *f_mul(ct_tensor *const *x, void *c) { (void)c; return ct_mul(x[0], x[1]); }
static ct_tensor *f_div(ct_tensor *const *x, void *c) { (void)c; return ct_div(x[0], x[1]); }
static ct_tensor *f_matmul(ct_tensor *const *x, void *c) { (void)c; return ct_matmul(x[0], x[1]); }
static ct_tensor *f_sum_dim1(ct_tensor *const *x, void *c) { (void)c; return ct_sum(x[0], (int[]){1}, 1, false); }
static ct_tensor *f_sum_all(ct_tensor *const *x, void *c) { (void)c; return ct_sum(x[0], NULL, 0, false); }
static ct_tensor *f_mean_keep(ct_tensor *const *x, void *c) { (void)c; return ct_mean(x[0], (int[]){0, -1}, 2, true); }

/* A float64 tensor of the shape with values in [0.5, 1.5) (away from 0 for division). */
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
    ct_manual_seed(7);
    int64_t s23[2] = {2, 3}, s3[1] = {3}, s41[2] = {4, 1}, s15[2] = {1, 5};
    ct_tensor *a = input(device, s23, 2), *b = input(device, s3, 1);
    ct_tensor *p = input(device, s41, 2), *q = input(device, s15, 2);
    ct_tensor *ab[2] = {a, b}, *pq[2] = {p, q};
    ct_gradcheck("add [2,3]+[3]", f_add, ab, NULL, 2, NULL);
    ct_gradcheck("sub [4,1]-[1,5]", f_sub, pq, NULL, 2, NULL);
    ct_gradcheck("mul [2,3]*[3]", f_mul, ab, NULL, 2, NULL);
    ct_gradcheck("div [4,1]/[1,5]", f_div, pq, NULL, 2, NULL);
    bool b_constant[2] = {false, true};
    ct_gradcheck("mul with a constant", f_mul, ab, b_constant, 2, NULL);

    int64_t s234[3] = {2, 3, 4};
    ct_tensor *t = input(device, s234, 3);
    ct_gradcheck("sum over dim 1", f_sum_dim1, &t, NULL, 1, NULL);
    ct_gradcheck("sum of all", f_sum_all, &t, NULL, 1, NULL);
    ct_gradcheck("mean over 0 and -1, keepdim", f_mean_keep, &t, NULL, 1, NULL);

    int64_t s34[2] = {3, 4}, s4[1] = {4}, s243[3] = {2, 4, 3}, s1234[4] = {2, 1, 3, 4}, s5[1] = {5}, s53[2] = {5, 3};
    ct_tensor *m34 = input(device, s34, 2), *v4 = input(device, s4, 1), *m43 = ct_contiguous(ct_transpose(m34, 0, 1));
    ct_tensor *b243 = input(device, s243, 3), *b1234 = input(device, s1234, 4);
    ct_tensor *v3 = input(device, s3, 1), *v5 = input(device, s5, 1), *m53 = input(device, s53, 2);
    ct_tensor *mm[2] = {m34, m43}, *mv[2] = {m34, v4}, *vm[2] = {v3, m34}, *vv[2] = {v4, input(device, s4, 1)};
    ct_tensor *bb[2] = {b1234, b243}, *vb[2] = {v4, b243}, *mt[2] = {m53, ct_transpose(m53, 0, 1)};
    (void)v5;
    ct_gradcheck("matmul [3,4]@[4,3]", f_matmul, mm, NULL, 2, NULL);
    ct_gradcheck("matmul [3,4]@[4]", f_matmul, mv, NULL, 2, NULL);
    ct_gradcheck("matmul [3]@[3,4]", f_matmul, vm, NULL, 2, NULL);
    ct_gradcheck("matmul [4]@[4]", f_matmul, vv, NULL, 2, NULL);
    ct_gradcheck("matmul [2,1,3,4]@[2,4,3]", f_matmul, bb, NULL, 2, NULL);
    ct_gradcheck("matmul [4]@[2,4,3]", f_matmul, vb, NULL, 2, NULL);
    bool second_constant[2] = {false, true};
    ct_gradcheck("matmul with a transposed view", f_matmul, mt, second_constant, 2, NULL);
    ct_scope_pop();
}

static void gradients_on_the_cpu(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
}

static void gradients_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) check_on((ct_device){CT_OPENCL, i});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_on_the_cpu),
        cmocka_unit_test(gradients_on_opencl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
