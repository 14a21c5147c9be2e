/* The C twin of a PyTorch tutorial's snippet ("precise control of the GPU: torch.cuda.device"):
 *
 *   device = torch.device("cuda:0")
 *   x = torch.tensor([1.0, 2.0], device=device)
 *   y = torch.tensor([3.0, 4.0], device=device)
 *   z = x + y                                   # created on the GPU
 *   with torch.cuda.device(1):                  # a default device for a region
 *       a = torch.tensor([1.0, 2.0]); b = torch.tensor([3.0, 4.0]); c = a + b
 *   device_ids = list(range(torch.cuda.device_count()))
 *   x = torch.tensor([1.0, 2.0], device=device_ids[0])
 *   y = torch.tensor([3.0, 4.0], device=device_ids[1])
 *
 * Here the accelerator is a CUDA GPU, else an OpenCL device, else the CPU (so the program runs
 * everywhere); "cuda" in the seed reads as that type. */
#include <stdio.h>

#include "ctorch.h"

#define CHECK(expr)                                                                              \
    do {                                                                                         \
        if (!(expr)) {                                                                           \
            fprintf(stderr, "error: %s\n", ct_last_error_message());                            \
            ct_scope_pop();                                                                      \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

static ct_device_type accelerator_type(void)
{
    if (ct_device_count(CT_CUDA) > 0) return CT_CUDA;
    if (ct_device_count(CT_OPENCL) > 0) return CT_OPENCL;
    return CT_CPU;
}

static void show(const char *name, const ct_tensor *t)
{
    char device[CT_DEVICE_STRING_MAX];
    printf("%s on %s: ", name, ct_device_format(ct_tensor_device(t), device, sizeof device));
    ct_print(t);
}

int main(void)
{
    ct_scope_push();
    ct_device_type type = accelerator_type();
    int count = ct_device_count(type);
    printf("accelerator: %s, %d device%s\n", ct_device_type_name(type), count, count == 1 ? "" : "s");

    /* Tensors created directly on device 0, and their sum computed there. */
    ct_device device = {type, 0};
    float xs[2] = {1, 2}, ys[2] = {3, 4};
    int64_t shape[1] = {2};
    ct_tensor *x = ct_tensor_from_data(xs, CT_F32, shape, 1, device);
    ct_tensor *y = ct_tensor_from_data(ys, CT_F32, shape, 1, device);
    ct_tensor *z = ct_add(x, y);
    CHECK(z);
    show("z = x + y", z);

    /* with torch.cuda.device(1): the guard makes device 1 the current one, and a device given
     * without an index ({type, -1}, what "cuda" means) resolves to it. */
    ct_device second = {type, count > 1 ? 1 : 0};
    ct_device_guard guard;
    CHECK(ct_device_guard_enter(&guard, second) == CT_OK);
    ct_device current = {type, -1};
    ct_tensor *a = ct_tensor_from_data(xs, CT_F32, shape, 1, current);
    ct_tensor *b = ct_tensor_from_data(ys, CT_F32, shape, 1, current);
    ct_tensor *c = ct_add(a, b);
    ct_device_guard_exit(&guard);
    CHECK(c);
    show("c = a + b inside the guard", c);

    /* One tensor per device; an op across two devices is an error, not a silent copy. */
    ct_tensor *on_first = ct_tensor_from_data(xs, CT_F32, shape, 1, (ct_device){type, 0});
    ct_tensor *on_last = ct_tensor_from_data(ys, CT_F32, shape, 1, (ct_device){type, count - 1});
    CHECK(on_first && on_last);
    show("x", on_first);
    show("y", on_last);
    ct_tensor *mixed = ct_add(on_first, on_last);
    if (!mixed) {
        printf("x + y across devices: %s\n", ct_last_error_message());
        ct_clear_error();
        /* move one explicitly, then add */
        mixed = ct_add(on_first, ct_to(on_last, ct_tensor_device(on_first)));
        CHECK(mixed);
    }
    show("x + y", mixed);
    ct_scope_pop();
    return 0;
}
