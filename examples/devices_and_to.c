/* The C twin of a PyTorch tutorial's snippet ("moving data to the GPU; common torch.cuda methods"):
 *
 *   os.environ.setdefault("CUDA_VISIBLE_DEVICES", "2, 3")   # logical 0, 1 = physical 2, 3
 *   device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
 *   x_cpu = torch.ones((3, 3)); x_gpu = x_cpu.to(device)   # a new tensor: the id changes
 *   net = nn.Sequential(nn.Linear(3, 3))
 *   print("id:{} is_cuda: {}".format(id(net), next(net.parameters()).is_cuda))
 *   net.to(device)                                          # in place: the id stays
 *   print("id:{} is_cuda: {}".format(id(net), next(net.parameters()).is_cuda))
 *   torch.cuda.device_count(); torch.cuda.get_device_name()
 *   torch.cuda.manual_seed(); torch.cuda.manual_seed_all(); torch.cuda.set_device()
 *
 * The visible-devices variable of OpenCL is CTORCH_OPENCL_VISIBLE_DEVICES (the same rules as
 * CUDA_VISIBLE_DEVICES); like os.environ.setdefault, set it before the first device query.
 * The seed's is_cuda is false for an OpenCL device, so the module part also says whether the
 * parameter is on an accelerator. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include <stdlib.h>

#include "ctorch.h"

#define CHECK(expr)                                                                              \
    do {                                                                                         \
        if (!(expr)) {                                                                           \
            fprintf(stderr, "error: %s\n", ct_last_error_message());                            \
            ct_scope_pop();                                                                      \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

/* The seed's print(id(net), next(net.parameters()).is_cuda), and where the parameter is. */
static void print_module(const char *when, const ct_module *net, const ct_tensor *weight)
{
    char name[CT_DEVICE_STRING_MAX];
    ct_device at = ct_tensor_device(weight);
    printf("%-13s net at %p, its weight at %p on %s, is_cuda %d, on an accelerator: %s\n", when,
           (const void *)net, (const void *)weight, ct_device_format(at, name, sizeof name),
           ct_tensor_is_cuda(weight), at.type != CT_CPU ? "yes" : "no");
}

int main(void)
{
    /* Show every device in reverse order, if the user did not choose: logical 0 is then the
     * last physical device. */
    setenv("CTORCH_OPENCL_VISIBLE_DEVICES", "1,0", 0);
    ct_scope_push();

    ct_device_type type = ct_device_count(CT_CUDA) > 0 ? CT_CUDA
                        : ct_device_count(CT_OPENCL) > 0 ? CT_OPENCL : CT_CPU;
    ct_device device = {type, 0};
    char name[CT_DEVICE_STRING_MAX];
    printf("device: %s\n", ct_device_format(device, name, sizeof name));

    /* device_count and get_device_name, for every type */
    for (int t = 0; t < CT_DEVICE_TYPE_COUNT; t++) {
        int count = ct_device_count((ct_device_type)t);
        printf("%s device_count: %d\n", ct_device_type_name((ct_device_type)t), count);
        for (int i = 0; i < count; i++) {
            ct_device_props props;
            if (ct_get_device_properties((ct_device){(ct_device_type)t, i}, &props) == CT_OK)
                printf("  %s:%d %s\n", ct_device_type_name((ct_device_type)t), i, props.name);
        }
    }

    /* tensor.to makes a new tensor; the original stays where it was */
    int64_t shape[2] = {3, 3};
    ct_tensor *x_cpu = ct_ones(shape, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *x_dev = ct_to(x_cpu, device);
    CHECK(x_dev);
    printf("x_cpu: device %s, is_cuda %d, at %p\n",
           ct_device_format(ct_tensor_device(x_cpu), name, sizeof name), ct_tensor_is_cuda(x_cpu), (void *)x_cpu);
    printf("x_dev: device %s, is_cuda %d, at %p (%s)\n",
           ct_device_format(ct_tensor_device(x_dev), name, sizeof name), ct_tensor_is_cuda(x_dev),
           (void *)x_dev, x_dev == x_cpu ? "the same tensor: it was there already" : "a new tensor");

    /* module.to moves the module in place: the module, and its parameter tensors too, stay the
     * same objects (the seed's id does not change), only their data moves. */
    ct_module *net = ct_sequential((ct_module *[]){ct_linear(3, 3, true)}, 1);
    ct_tensor *weight = net ? ct_module_parameter(net, "0.weight") : NULL; /* next(net.parameters()) */
    ct_tensor *weight_after = NULL;
    if (weight) {
        print_module("before net.to", net, weight);
        /* The weight, asked for again after the move, is the very same tensor object. */
        if (ct_module_to(net, device) == CT_OK) weight_after = ct_module_parameter(net, "0.weight");
        if (weight_after) {
            print_module("after net.to", net, weight_after);
            printf("the same weight tensor before and after: %s\n", weight_after == weight ? "yes" : "no");
        }
    }
    ct_module_release(net); /* before CHECK, which leaves main on an error */
    CHECK(weight_after);

    /* manual_seed_all: one seed, the same numbers on every device */
    ct_manual_seed(42);
    int64_t four[1] = {4};
    ct_tensor *on_cpu = ct_randn(four, 1, CT_F32, CT_DEVICE_CPU);
    ct_manual_seed(42);
    ct_tensor *on_dev = ct_randn(four, 1, CT_F32, device);
    CHECK(on_cpu && on_dev);
    printf("randn after manual_seed(42) on cpu: ");
    ct_print(on_cpu);
    printf("and on %s: ", ct_device_format(device, name, sizeof name));
    ct_print(on_dev);

    /* set_device: the current device of this thread ("cuda" without an index) */
    int count = ct_device_count(type);
    CHECK(ct_set_device((ct_device){type, count - 1}) == CT_OK);
    printf("current %s device: %d\n", ct_device_type_name(type), ct_current_device(type).index);
    ct_scope_pop();
    return 0;
}
