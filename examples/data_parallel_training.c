/* The C twin of a PyTorch tutorial's snippet (nn.DataParallel with FooNet), made a real training loop:
 *
 *   gpu_list = [0]
 *   os.environ.setdefault("CUDA_VISIBLE_DEVICES", ",".join(map(str, gpu_list)))
 *   device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
 *
 *   class FooNet(nn.Module):
 *       def __init__(self, neural_num, layers=3):
 *           super(FooNet, self).__init__()
 *           self.linears = nn.ModuleList([nn.Linear(neural_num, neural_num, bias=False)
 *                                         for i in range(layers)])
 *       def forward(self, x):
 *           print("\nbatch size in forward: {}".format(x.size()[0]))
 *           for (i, linear) in enumerate(self.linears):
 *               x = linear(x)
 *               x = torch.relu(x)
 *           return x
 *
 *   batch_size = 16
 *   inputs = torch.randn(batch_size, 3)
 *   labels = torch.randn(batch_size, 3)
 *   inputs, labels = inputs.to(device), labels.to(device)
 *   net = FooNet(neural_num=3, layers=3)
 *   net = nn.DataParallel(net)
 *   net.to(device)
 *   for epoch in range(1):
 *       outputs = net(inputs)
 *       print("model outputs.size: {}".format(outputs.size()))
 *   print("CUDA_VISIBLE_DEVICES :{}".format(os.environ["CUDA_VISIBLE_DEVICES"]))
 *   print("device_count :{}".format(torch.cuda.device_count()))
 *
 * and then what the seed leaves out, the training itself:
 *
 *   criterion = nn.MSELoss()
 *   optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
 *   for step in range(8):
 *       optimizer.zero_grad()
 *       loss = criterion(net(inputs), labels)
 *       loss.backward()
 *       optimizer.step()
 *       print("step {} loss {:.6f}".format(step, loss.item()))
 *
 * A class deriving from nn.Module is, in C, ct_module_create with a forward callback; its
 * layers are registered as children, so that their parameters get dotted names
 * ("linears.0.weight"), move with ct_module_to and are found by the optimizer.
 * nn.DataParallel(net) is ct_data_parallel(net, NULL, 0, device): every visible device of the
 * device's type. Each forward splits the batch of 16 over the devices (8 and 8 on two), runs a
 * replica of FooNet on each in a thread of its own, so that each prints the batch size it sees,
 * and gathers the outputs on the first device; backward sums the replicas' gradients into net's.
 * The OpenCL twin of CUDA_VISIBLE_DEVICES is CTORCH_OPENCL_VISIBLE_DEVICES: the seed shows GPU 0
 * only, here both devices are listed so that the batch is split (a missing device is left out, as
 * CUDA does). With one device the replica is net itself, with none the CPU runs it. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <inttypes.h>
#include <stdatomic.h>
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

enum { BATCH_SIZE = 16, NEURAL_NUM = 3, LAYERS = 3, STEPS = 8 };

/* How many forwards of FooNet ran: the replicas run it concurrently. */
static atomic_int forwards;

/* FooNet.forward: every linear layer followed by a ReLU. It returns a new reference, as every
 * forward must; the scope releases the intermediate results. Under DataParallel, self is the
 * replica of the device this thread runs, and its layers are found by name (never kept in module
 * data), so that each replica uses its own parameters. */
static ct_tensor *foonet_forward(ct_module *self, const ct_tensor *x)
{
    printf("\nbatch size in forward: %" PRId64 "\n", ct_tensor_size(x, 0));
    atomic_fetch_add(&forwards, 1);
    ct_module *linears = ct_module_child(self, "linears");
    ct_scope_push();
    ct_tensor *h = NULL;
    for (int i = 0; i < ct_module_child_count(linears); i++) {
        ct_tensor *y = ct_module_forward(ct_module_child_at(linears, i), i == 0 ? x : h); /* linear(x) */
        h = ct_relu(y);                                                                 /* relu(x) */
        if (!h) break; /* the error of the failed call is kept for the caller */
    }
    if (h) ct_scope_keep(h); /* the result outlives the scope */
    ct_scope_pop();
    return h;
}

/* FooNet(neural_num, layers):
 * self.linears = nn.ModuleList([nn.Linear(neural_num, neural_num, bias=False) for i in range(layers)]) */
static ct_module *foonet_create(int64_t neural_num, int layers)
{
    ct_module *net = ct_module_create("FooNet", foonet_forward, NULL, NULL);
    ct_module *linears = ct_module_list(NULL, 0);
    ct_status status = net && linears ? ct_module_register_module(net, "linears", linears) : ct_last_error();
    for (int i = 0; status == CT_OK && i < layers; i++) {
        ct_module *linear = ct_linear(neural_num, neural_num, false);
        status = linear ? ct_sequential_append(linears, linear) : ct_last_error();
        ct_module_release(linear); /* the list holds its own reference */
    }
    ct_module_release(linears); /* the net holds its own reference */
    if (status != CT_OK) {
        ct_module_release(net);
        return NULL;
    }
    return net;
}

/* torch.device("cuda" if torch.cuda.is_available() else "cpu"): the first accelerator of a type
 * that has one (CUDA first, then OpenCL), else the CPU. */
static ct_device choose_device(void)
{
    if (ct_device_count(CT_CUDA) > 0) return (ct_device){CT_CUDA, 0};
    if (ct_device_count(CT_OPENCL) > 0) return (ct_device){CT_OPENCL, 0};
    return CT_DEVICE_CPU;
}

int main(void)
{
    int exit_code = 1;
    ct_module *net = NULL;
    ct_optimizer *optimizer = NULL;
    ct_tensor *outputs = NULL, *loss = NULL;

    /* The devices to use, unless the user chose (os.environ.setdefault). */
    const int gpu_list[] = {0, 1};
    char gpu_list_str[32];
    snprintf(gpu_list_str, sizeof gpu_list_str, "%d,%d", gpu_list[0], gpu_list[1]);
    setenv("CTORCH_OPENCL_VISIBLE_DEVICES", gpu_list_str, 0);
    ct_scope_push(); /* the tensors of main are released by the pop at the end */
    ct_device device = choose_device();
    char name[CT_DEVICE_STRING_MAX];
    printf("device: %s\n", ct_device_format(device, name, sizeof name));

    /* inputs and labels are made on the CPU and moved, as in the seed. */
    ct_manual_seed(1);
    int64_t shape[2] = {BATCH_SIZE, NEURAL_NUM};
    ct_tensor *inputs = ct_to(ct_randn(shape, 2, CT_F32, CT_DEVICE_CPU), device);
    ct_tensor *labels = ct_to(ct_randn(shape, 2, CT_F32, CT_DEVICE_CPU), device);
    CHECK(inputs && labels);

    /* net = nn.DataParallel(FooNet(3, 3)); net.to(device). The wrapper takes its own reference
     * to the FooNet, whose parameters ct_module_to moves in place onto the first device. */
    ct_module *foonet = foonet_create(NEURAL_NUM, LAYERS);
    CHECK(foonet);
    net = ct_data_parallel(foonet, NULL, 0, device);
    ct_module_release(foonet);
    CHECK(net);
    CHECK(ct_module_to(net, device) == CT_OK);
    char *text = ct_module_to_string(net);
    CHECK(text);
    printf("%s\n", text);
    free(text);
    int used = device.type == CT_CPU ? 1 : ct_device_count(device.type);
    printf("DataParallel over %d device%s\n", used, used == 1 ? "" : "s");

    /* The seed's loop: one forward pass, a replica per device. */
    for (int epoch = 0; epoch < 1; epoch++) {
        outputs = ct_module_forward(net, inputs);
        CHECK(outputs);
        printf("model outputs.size: [%" PRId64 ", %" PRId64 "]\n", ct_tensor_size(outputs, 0),
               ct_tensor_size(outputs, 1));
        if (ct_tensor_size(outputs, 0) != BATCH_SIZE || atomic_load(&forwards) != used) {
            fprintf(stderr, "error: want [%d, %d] from %d replicas, got %" PRId64 " rows from %d\n", BATCH_SIZE,
                    NEURAL_NUM, used, ct_tensor_size(outputs, 0), atomic_load(&forwards));
            goto done;
        }
        ct_release(outputs);
        outputs = NULL;
    }
    const char *visible = getenv("CTORCH_OPENCL_VISIBLE_DEVICES");
    printf("CTORCH_OPENCL_VISIBLE_DEVICES :%s\n", visible ? visible : "");
    printf("device_count :%d\n", ct_device_count(CT_OPENCL));

    /* Training through the wrapper: the optimizer holds FooNet's parameters (the wrapper's are
     * the same tensors), on the first device, where backward sums the replicas' gradients. */
    ct_sgd_options options = ct_sgd_options_default(0.1);
    options.momentum = 0.9;
    optimizer = ct_optim_sgd(net, &options);
    CHECK(optimizer);
    double first_loss = 0, last_loss = 0;
    for (int step = 0; step < STEPS; step++) {
        ct_optimizer_zero_grad(optimizer);
        outputs = ct_module_forward(net, inputs);
        loss = ct_mse_loss(outputs, labels);
        CHECK(loss);
        CHECK(ct_backward(loss) == CT_OK);
        CHECK(ct_optimizer_step(optimizer) == CT_OK);
        CHECK(ct_item(loss, &last_loss) == CT_OK);
        if (step == 0) first_loss = last_loss;
        printf("step %d loss %.6f (on %s)\n", step, last_loss,
               ct_device_format(ct_tensor_device(loss), name, sizeof name));
        ct_release(outputs);
        ct_release(loss);
        outputs = loss = NULL;
    }
    if (!(last_loss < first_loss)) {
        fprintf(stderr, "error: the loss did not decrease: %.6f at the first step, %.6f at the last\n",
                first_loss, last_loss);
        goto done;
    }
    printf("the loss went from %.6f to %.6f in %d steps\n", first_loss, last_loss, STEPS);
    exit_code = 0;

done:
    ct_release(outputs);
    ct_release(loss);
    ct_optimizer_free(optimizer);
    ct_module_release(net);
    ct_scope_pop();
    return exit_code;
}
