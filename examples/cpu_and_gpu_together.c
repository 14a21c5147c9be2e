/* The C twin of a PyTorch tutorial's snippet ("using the CPU and the GPU together in PyTorch"):
 *
 *   if torch.cuda.is_available():
 *       device = torch.device("cuda"); print("Using GPU")
 *   else:
 *       device = torch.device("cpu"); print("Using CPU")
 *   tensor = torch.rand(3, 3).to(device)
 *   print(tensor)
 *
 *   class SimpleModel(nn.Module):
 *       def __init__(self):
 *           super(SimpleModel, self).__init__()
 *           self.fc = nn.Linear(3, 3)
 *       def forward(self, x):
 *           return self.fc(x)
 *
 *   model = SimpleModel().to(device)
 *   output = model(tensor)
 *   print(output)
 *   output_cpu = output.to("cpu")
 *   print(output_cpu)
 *
 * The device is an accelerator when there is one: CUDA, else OpenCL (PoCL's OpenCL device runs
 * on the CPU cores, but it is a separate device all the same), else the CPU. SimpleModel, a
 * class deriving from nn.Module, is ct_module_create with a forward callback and its Linear
 * registered as the child "fc".
 *
 * As in the seed, the random tensor and the layer's initial weights both come from the CPU's
 * generator, so the program prints the same numbers whatever the device. Creating the tensor on
 * the device directly (ct_rand(..., device)) would save a copy, as the PyTorch tutorial advises, but would
 * draw from that device's own generator: other numbers, as in PyTorch. */
#include <stdio.h>
#include <stdlib.h>

#include "ctorch.h"

/* Reports a failed call and leaves through the clean-up at the end of main. */
#define CHECK(expr)                                                                              \
    do {                                                                                         \
        if (!(expr)) {                                                                           \
            fprintf(stderr, "error: %s\n", ct_last_error_message());                            \
            goto done;                                                                           \
        }                                                                                        \
    } while (0)

/* SimpleModel.forward: self.fc(x). */
static ct_tensor *simple_model_forward(ct_module *self, const ct_tensor *x)
{
    return ct_module_forward(ct_module_child(self, "fc"), x);
}

/* SimpleModel(): its one layer, nn.Linear(3, 3), initialised from the global seed. */
static ct_module *simple_model_create(void)
{
    ct_module *model = ct_module_create("SimpleModel", simple_model_forward, NULL, NULL);
    ct_module *fc = ct_linear(3, 3, true);
    if (!model || !fc || ct_module_register_module(model, "fc", fc) != CT_OK) {
        ct_module_release(model);
        model = NULL;
    }
    ct_module_release(fc); /* the model holds its own reference */
    return model;
}

int main(void)
{
    int exit_code = 1;
    ct_module *model = NULL;
    ct_scope_push(); /* every tensor below is released by the pop */

    ct_device device = CT_DEVICE_CPU;
    if (ct_device_count(CT_CUDA) > 0) device = (ct_device){CT_CUDA, 0};
    else if (ct_device_count(CT_OPENCL) > 0) device = (ct_device){CT_OPENCL, 0};
    char name[CT_DEVICE_STRING_MAX];
    printf("Using %s\n", ct_device_format(device, name, sizeof name));

    ct_manual_seed(0);
    int64_t shape[2] = {3, 3};
    ct_tensor *tensor = ct_to(ct_rand(shape, 2, CT_F32, CT_DEVICE_CPU), device);
    CHECK(tensor);
    CHECK(ct_print(tensor) == CT_OK);

    /* model = SimpleModel().to(device): made on the CPU, moved in place. */
    model = simple_model_create();
    CHECK(model);
    CHECK(ct_module_to(model, device) == CT_OK);
    char *text = ct_module_to_string(model);
    CHECK(text);
    printf("%s\nits parameters are on %s\n", text,
           ct_device_format(ct_module_device(model), name, sizeof name));
    free(text);

    /* output = model(tensor), computed on the device. */
    ct_tensor *output = ct_module_forward(model, tensor);
    CHECK(output);
    printf("output on %s:\n", ct_device_format(ct_tensor_device(output), name, sizeof name));
    CHECK(ct_print(output) == CT_OK);

    /* output_cpu = output.to("cpu") */
    ct_tensor *output_cpu = ct_to(output, CT_DEVICE_CPU);
    CHECK(output_cpu);
    printf("output back on the CPU:\n");
    CHECK(ct_print(output_cpu) == CT_OK);
    exit_code = 0;

done:
    ct_module_release(model);
    ct_scope_pop();
    return exit_code;
}
