/* Finite-difference checks of scaled-dot-product attention's gradients for q, k and v, on the
 * fused path (plain and causal, Tq != Tk) and the composed one (a bool mask; a float mask, which
 * carries a gradient of its own), on the CPU and on every OpenCL device. */
#include <stdlib.h>

#include "support/devices.h"
#include "support/gradcheck.h"
#include "test_common.h"

typedef struct attention_case {
    bool causal;
    const ct_tensor *bool_mask;
} attention_case;

static ct_tensor *f_attention(ct_tensor *const *x, void *c)
{
    const attention_case *a = c;
    return ct_scaled_dot_product_attention(x[0], x[1], x[2], a->bool_mask, 0.0, a->causal, 0.0);
}

static ct_tensor *f_float_mask(ct_tensor *const *x, void *c)
{
    (void)c;
    return ct_scaled_dot_product_attention(x[0], x[1], x[2], x[3], 0.0, false, 0.7);
}

static ct_tensor *input(ct_device device, const int64_t *shape, int ndim)
{
    ct_tensor *r = ct_randn(shape, ndim, CT_F64, CT_DEVICE_CPU);
    ct_tensor *out = ct_to(r, device);
    ct_release(r);
    return out;
}

static void check_on(ct_device device)
{
    ct_scope_push();
    ct_manual_seed(21);
    int64_t qs[4] = {1, 2, 5, 3}, ks[4] = {1, 2, 7, 3}, vs[4] = {1, 2, 7, 4}, ms[2] = {5, 7};
    ct_tensor *qkv[4] = {input(device, qs, 4), input(device, ks, 4), input(device, vs, 4),
                         input(device, ms, 2)};
    const char *paths[2] = {"fused", "math"};
    for (int p = 0; p < 2; p++) {
        setenv("CTORCH_SDPA", paths[p], 1);
        attention_case plain = {false, NULL}, causal = {true, NULL};
        ct_gradcheck(paths[p], f_attention, qkv, NULL, 3, &plain);
        ct_gradcheck(paths[p], f_attention, qkv, NULL, 3, &causal);
    }
    unsetenv("CTORCH_SDPA");
    ct_tensor *mask = ct_gt_scalar(qkv[3], -0.5);
    attention_case masked = {false, mask};
    ct_gradcheck("bool mask", f_attention, qkv, NULL, 3, &masked);
    ct_gradcheck("float mask", f_float_mask, qkv, NULL, 4, NULL);
    ct_scope_pop();
}

static void attention_gradients_on_every_device(void **state)
{
    (void)state;
    ct_device devices[8];
    int n = ct_test_devices(devices);
    for (int i = 0; i < n; i++) check_on(devices[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(attention_gradients_on_every_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
