/* The C twin of seed 004 ("using the CPU and the GPU together in PyTorch"):
 *
 *   device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
 *   tensor = torch.rand(3, 3).to(device)
 *   class SimpleModel(nn.Module):          # self.fc = nn.Linear(3, 3)
 *       def forward(self, x): return self.fc(x)
 *   model = SimpleModel().to(device)
 *   output = model(tensor)
 *   output_cpu = output.to("cpu")
 *
 * nn.Linear is x @ W^T + b; here it is written with the tensor ops (the nn layer comes later).
 * Tensors are created on the device directly where the seed creates them on the CPU and moves
 * them: that avoids one copy, which is what seed 001 advises. */
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

int main(void)
{
    ct_scope_push();
    ct_device device;
    CHECK(ct_best_device(&device) == CT_OK);
    char name[CT_DEVICE_STRING_MAX];
    printf("Using %s\n", ct_device_format(device, name, sizeof name));

    ct_manual_seed(0);
    int64_t shape[2] = {3, 3};
    ct_tensor *tensor = ct_rand(shape, 2, CT_F32, device); /* torch.rand(3, 3, device=device) */
    CHECK(tensor);
    ct_print(tensor);

    /* The Linear(3, 3) layer's parameters, initialised as PyTorch does: U(-1/sqrt(3), 1/sqrt(3)). */
    double bound = 0.5773502691896258;
    int64_t bias_shape[1] = {3};
    ct_tensor *weight = ct_sub_scalar(ct_mul_scalar(ct_rand(shape, 2, CT_F32, device), 2 * bound), bound);
    ct_tensor *bias = ct_sub_scalar(ct_mul_scalar(ct_rand(bias_shape, 1, CT_F32, device), 2 * bound), bound);
    CHECK(weight && bias);

    /* output = fc(tensor) = tensor @ weight^T + bias, on the device. */
    ct_tensor *output = ct_add(ct_matmul(tensor, ct_transpose(weight, 0, 1)), bias);
    CHECK(output);
    printf("output on %s:\n", ct_device_format(ct_tensor_device(output), name, sizeof name));
    ct_print(output);

    /* output_cpu = output.to("cpu") */
    ct_tensor *output_cpu = ct_to(output, CT_DEVICE_CPU);
    CHECK(output_cpu);
    printf("output back on the CPU:\n");
    ct_print(output_cpu);

    ct_scope_pop();
    return 0;
}
