/* The C twin of a PyTorch tutorial's snippet ("GPU-accelerated computing in PyTorch"): every tensor knows its device.
 *
 *   cpu_tensor = torch.tensor([1, 2, 3]);  print(cpu_tensor.device)     # device(type='cpu')
 *   if torch.cuda.is_available():
 *       gpu_tensor = torch.tensor([1, 2, 3], device='cuda'); print(gpu_tensor.device)
 *       cuda_tensor = cpu_tensor.to('cuda')   # all ops on it now run on the GPU
 */
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

static void print_device(const char *name, const ct_tensor *t)
{
    char device[CT_DEVICE_STRING_MAX];
    printf("%s.device: %s%s\n", name, ct_device_format(ct_tensor_device(t), device, sizeof device),
           ct_tensor_is_cuda(t) ? " (cuda)" : "");
}

int main(void)
{
    ct_scope_push();
    int64_t values[3] = {1, 2, 3};
    int64_t shape[1] = {3};
    ct_tensor *cpu_tensor = ct_tensor_from_data(values, CT_I64, shape, 1, CT_DEVICE_CPU);
    CHECK(cpu_tensor);
    print_device("cpu_tensor", cpu_tensor);

    ct_device_type types[2] = {CT_CUDA, CT_OPENCL};
    for (int i = 0; i < 2; i++) {
        if (!ct_is_available(types[i])) {
            printf("%s: not available (%s)\n", ct_device_type_name(types[i]),
                   ct_backend_unavailable_reason(types[i]));
            continue;
        }
        ct_device device = {types[i], -1}; /* "cuda": the current device of that type */
        ct_tensor *on_device = ct_tensor_from_data(values, CT_I64, shape, 1, device);
        CHECK(on_device);
        print_device("device_tensor", on_device);
        ct_tensor *moved = ct_to(cpu_tensor, device); /* a new tensor; cpu_tensor stays */
        ct_tensor *squared = ct_mul(moved, moved);    /* runs where the data is */
        CHECK(squared);
        print_device("moved", moved);
        ct_print(squared);
        printf("cpu_tensor still on the cpu: %s\n",
               ct_tensor_device(cpu_tensor).type == CT_CPU ? "yes" : "no");
    }
    ct_scope_pop();
    return 0;
}
