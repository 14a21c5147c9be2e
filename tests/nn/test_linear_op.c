/* The fused linear op under nn.Linear (y = x W^T + b as one GEMM over the copied bias, with its
 * own backward): values against plain C, gradients by finite differences (with and without bias,
 * 3-D and non-contiguous inputs, and a weight view it hands to the composed ops), the node's name
 * and the composed ops' errors for operands it does not take; on the cpu and on opencl:0. */
#include "nn/nn_test.h"
#include "ops/nn_internal.h"
#include "support/gradcheck.h"

/* The op as a public call would make it: its result recorded in the open scope, and its own
 * calls kept out of it. */
static ct_tensor *linear(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b)
{
    ct_api_enter();
    return ct_api_return(ct_linear_apply("test", x, w, b));
}

static ct_tensor *f_linear(ct_tensor *const *x, void *c)
{
    bool *with_bias = c;
    return linear(x[0], x[1], *with_bias ? x[2] : NULL);
}

/* x [rows, in] W^T + b in plain C. */
static void reference(const double *x, const double *w, const double *b, int rows, int in, int out,
                      double *y)
{
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < out; o++) {
            double sum = b ? b[o] : 0.0;
            for (int k = 0; k < in; k++) sum += x[r * in + k] * w[o * in + k];
            y[r * out + o] = sum;
        }
}

static void check_on(ct_device device)
{
    ct_scope_push();
    double xs[24], ws[20], bs[5], want[30], got[30];
    for (int i = 0; i < 24; i++) xs[i] = sin(0.7 * i) - 0.2;
    for (int i = 0; i < 20; i++) ws[i] = cos(1.3 * i) * 0.5;
    for (int i = 0; i < 5; i++) bs[i] = 0.1 * i - 0.3;

    /* values, float32, a [2, 3, 4] input */
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        ct_tensor *x = tensor_of(xs, (int64_t[]){2, 3, 4}, 3, CT_F32, device);
        ct_tensor *w = tensor_of(ws, (int64_t[]){5, 4}, 2, CT_F32, device);
        ct_tensor *b = tensor_of(bs, (int64_t[]){5}, 1, CT_F32, device);
        ct_tensor *y = linear(x, w, with_bias ? b : NULL);
        assert_non_null(y);
        assert_int_equal(ct_tensor_ndim(y), 3);
        assert_int_equal(ct_tensor_size(y, 2), 5);
        reference(xs, ws, with_bias ? bs : NULL, 6, 4, 5, want);
        values_of(y, got, 30);
        assert_close_array(got, want, 30, 1e-5, 1e-6, "linear");
    }

    /* gradients, float64 */
    bool with_bias = true, without_bias = false;
    ct_tensor *x3 = tensor_of(xs, (int64_t[]){2, 3, 4}, 3, CT_F64, device);
    ct_tensor *w = tensor_of(ws, (int64_t[]){5, 4}, 2, CT_F64, device);
    ct_tensor *b = tensor_of(bs, (int64_t[]){5}, 1, CT_F64, device);
    ct_gradcheck("linear with bias, 3-d input", f_linear, (ct_tensor *[]){x3, w, b}, NULL, 3, &with_bias);
    ct_gradcheck("linear without bias", f_linear, (ct_tensor *[]){x3, w}, NULL, 2, &without_bias);
    /* a transposed input [4, 6] seen as [6, 4] */
    ct_tensor *stored = tensor_of(xs, (int64_t[]){4, 6}, 2, CT_F64, device);
    ct_tensor *xt = ct_detach(ct_transpose(stored, 0, 1));
    ct_gradcheck("linear of a transposed input", f_linear, (ct_tensor *[]){xt, w, b}, NULL, 3, &with_bias);
    /* a weight stored transposed goes through the composed ops */
    ct_tensor *w_stored = tensor_of(ws, (int64_t[]){4, 5}, 2, CT_F64, device);
    ct_tensor *wt = ct_detach(ct_transpose(w_stored, 0, 1));
    ct_gradcheck("linear of a transposed weight", f_linear, (ct_tensor *[]){x3, wt, b}, NULL, 3, &with_bias);

    /* the node */
    ct_requires_grad_(w, true);
    assert_string_equal(ct_grad_fn_name(linear(x3, w, b)), "AddmmBackward");
    assert_string_equal(ct_grad_fn_name(linear(x3, w, NULL)), "MmBackward");

    /* operands it does not take: the composed ops' errors */
    ct_tensor *x32 = tensor_of(xs, (int64_t[]){6, 4}, 2, CT_F32, device);
    assert_null(linear(x32, w, b));
    assert_error(CT_ERR_DTYPE, "ct_matmul: expected a and b to have the same dtype");
    ct_scope_pop();
}

static void linear_on_the_cpu(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
}

static void linear_on_opencl(void **state)
{
    (void)state;
    if (!have_opencl()) skip();
    check_on(OPENCL0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linear_on_the_cpu),
        cmocka_unit_test(linear_on_opencl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
