/* Finite-difference gradients of layer_norm (x, weight, bias; over one and two dims; without an
 * affine part), embedding (the weight, with repeated indices) and gelu_tanh,
 * on the CPU and on every OpenCL device. */
#include <stdio.h>

#include "support/gradcheck.h"
#include "test_common.h"

static ct_tensor *random_input(ct_device device, const int64_t *shape, int ndim)
{
    ct_tensor *r = ct_randn(shape, ndim, CT_F64, CT_DEVICE_CPU);
    ct_tensor *out = ct_to(r, device);
    ct_release(r);
    return out;
}

/* layer_norm over the last *context dims, with weight and bias when given */
static ct_tensor *f_layer_norm(ct_tensor *const *x, void *c)
{
    int ndim = *(const int *)c, xdim = ct_tensor_ndim(x[0]);
    ct_tensor *y = ct_layer_norm(x[0], ct_tensor_shape(x[0]) + (xdim - ndim), ndim, x[1], x[2], 1e-5);
    /* times x: the incoming gradient then varies with x too */
    ct_tensor *out = ct_mul(y, x[0]);
    ct_release(y);
    return out;
}

static ct_tensor *f_layer_norm_plain(ct_tensor *const *x, void *c)
{
    int ndim = *(const int *)c, xdim = ct_tensor_ndim(x[0]);
    return ct_layer_norm(x[0], ct_tensor_shape(x[0]) + (xdim - ndim), ndim, NULL, NULL, 1e-5);
}

typedef struct embedding_context {
    const ct_tensor *indices;
    int64_t padding_idx;
} embedding_context;

static ct_tensor *f_embedding(ct_tensor *const *x, void *c)
{
    const embedding_context *e = c;
    return ct_embedding(x[0], e->indices, e->padding_idx);
}

static ct_tensor *f_gelu_tanh(ct_tensor *const *x, void *c)
{
    (void)c;
    return ct_gelu_tanh(x[0]);
}

static void check_on(ct_device device)
{
    ct_scope_push();
    ct_manual_seed(11);
    int64_t s35[2] = {3, 5}, s5[1] = {5}, s245[3] = {2, 4, 5}, s45[2] = {4, 5};
    ct_tensor *x = random_input(device, s35, 2);
    ct_tensor *three[3] = {x, random_input(device, s5, 1), random_input(device, s5, 1)};
    int one = 1, two = 2;
    ct_gradcheck("layer_norm over the last dim, affine", f_layer_norm, three, NULL, 3, &one);
    ct_tensor *x3 = random_input(device, s245, 3);
    ct_tensor *over_two[3] = {x3, random_input(device, s45, 2), random_input(device, s45, 2)};
    ct_gradcheck("layer_norm over 2 dims, affine", f_layer_norm, over_two, NULL, 3, &two);
    ct_tensor *transposed = ct_detach(ct_transpose(x3, 0, 2)); /* [5, 4, 2] */
    ct_gradcheck("layer_norm of a transposed view", f_layer_norm_plain, &transposed, NULL, 1, &one);

    int64_t s64[2] = {6, 4}, s9[1] = {9};
    const int64_t picks[9] = {1, 3, 1, 0, 5, 1, 3, 2, 1};
    ct_tensor *indices = ct_tensor_from_data(picks, CT_I64, s9, 1, device);
    ct_tensor *w = random_input(device, s64, 2);
    /* (a padding row's gradient is zero by definition, not the derivative: test_transformer_layers) */
    embedding_context none = {indices, -1};
    ct_gradcheck("embedding, repeated indices", f_embedding, &w, NULL, 1, &none);

    ct_tensor *g = random_input(device, s245, 3);
    ct_gradcheck("gelu_tanh", f_gelu_tanh, &g, NULL, 1, NULL);
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
