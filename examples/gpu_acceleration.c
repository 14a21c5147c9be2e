/* The C twin of a PyTorch tutorial's snippet ("PyTorch data structures: GPU acceleration"): check which devices are
 * there, pick one, move tensors to it, compute there, and bring the result back to the CPU.
 *
 *   print("GPU available:", torch.cuda.is_available())
 *   for i in range(torch.cuda.device_count()): print(torch.cuda.get_device_name(i))
 *   device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
 *   x = torch.tensor([11, 2, 5, 6]).to(device)
 *   result = x * 2
 *   result = result.to('cpu')
 *   result = result * 2
 *   x = torch.tensor([1, 1, 2, 3]).to('cuda')   # without a GPU: "Torch not compiled with CUDA enabled"
 */
#include <stdio.h>

#include "ctorch.h"

/* Reports a failed call and leaves: ctorch never aborts, the caller decides. */
#define CHECK(expr)                                                                              \
    do {                                                                                         \
        if (!(expr)) {                                                                           \
            fprintf(stderr, "error: %s\n", ct_last_error_message());                            \
            ct_scope_pop();                                                                      \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

int main(void)
{
    ct_scope_push(); /* every tensor below is released by the pop */

    /* 1. Which accelerators are there? */
    printf("CUDA available: %s\n", ct_is_available(CT_CUDA) ? "yes" : "no");
    printf("OpenCL available: %s\n", ct_is_available(CT_OPENCL) ? "yes" : "no");
    for (int type = CT_CUDA; type < CT_DEVICE_TYPE_COUNT; type++)
        for (int i = 0; i < ct_device_count((ct_device_type)type); i++) {
            ct_device_props props;
            if (ct_get_device_properties((ct_device){(ct_device_type)type, i}, &props) == CT_OK)
                printf("%s device %d: %s\n", ct_device_type_name((ct_device_type)type), i, props.name);
        }

    /* 2. device = torch.device("cuda:0" if available else "cpu"), generalised: the best device. */
    ct_device device;
    CHECK(ct_best_device(&device) == CT_OK);
    char name[CT_DEVICE_STRING_MAX];
    printf("using device: %s\n", ct_device_format(device, name, sizeof name));

    /* 3. x = torch.tensor([11, 2, 5, 6]).to(device): created on the CPU, moved to the device. */
    int64_t values[4] = {11, 2, 5, 6};
    int64_t shape[1] = {4};
    ct_tensor *x_cpu = ct_tensor_from_data(values, CT_I64, shape, 1, CT_DEVICE_CPU);
    ct_tensor *x = ct_to(x_cpu, device);
    CHECK(x);

    /* 4. result = x * 2, computed where x lives. */
    int64_t two_value = 2;
    ct_tensor *two = ct_tensor_from_data(&two_value, CT_I64, NULL, 0, device);
    ct_tensor *result = ct_mul(x, two);
    CHECK(result);
    printf("x * 2 on %s: ", ct_device_format(ct_tensor_device(result), name, sizeof name));
    ct_print(result);

    /* 5. Back to the CPU, where the rest of the program works on it. */
    ct_tensor *result_cpu = ct_to(result, CT_DEVICE_CPU);
    ct_tensor *two_cpu = ct_to(two, CT_DEVICE_CPU);
    ct_tensor *again = ct_mul(result_cpu, two_cpu);
    CHECK(again);
    printf("(x * 2).to('cpu') * 2: ");
    ct_print(again);
    int64_t back[4];
    CHECK(ct_tensor_to_array(again, back, sizeof back) == CT_OK);
    printf("as a C array: %lld %lld %lld %lld\n", (long long)back[0], (long long)back[1],
           (long long)back[2], (long long)back[3]);

    /* 6. Moving to a device that is not there is an error, not a crash. */
    ct_device cuda;
    if (ct_device_parse("cuda", &cuda) != CT_OK) {
        printf("x.to('cuda') here: %s\n", ct_last_error_message());
        ct_clear_error();
    } else {
        ct_tensor *on_cuda = ct_to(x_cpu, cuda);
        CHECK(on_cuda);
        printf("x.to('cuda'): ");
        ct_print(on_cuda);
    }

    ct_scope_pop();
    return 0;
}
