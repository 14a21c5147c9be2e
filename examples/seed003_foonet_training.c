/* The C twin of seed 003 §4.1 (FooNet and its training loop), made a real training loop:
 *
 *   os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0")
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
 * nn.DataParallel (one process splitting each batch over several GPUs) has no twin here: the
 * model runs on one device. The OpenCL twin of CUDA_VISIBLE_DEVICES is
 * CTORCH_OPENCL_VISIBLE_DEVICES. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <inttypes.h>
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

/* FooNet.forward: every linear layer followed by a ReLU. It returns a new reference, as every
 * forward must; the scope releases the intermediate results. */
static ct_tensor *foonet_forward(ct_module *self, const ct_tensor *x)
{
    printf("\nbatch size in forward: %" PRId64 "\n", ct_tensor_size(x, 0));
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

/* An accelerator if there is one (CUDA first, then OpenCL), else the CPU. */
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

    /* Use the first accelerator only, unless the user chose (os.environ.setdefault). */
    setenv("CTORCH_OPENCL_VISIBLE_DEVICES", "0", 0);
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

    /* The model is made on the CPU and moved in place: `net` stays the same object. */
    net = foonet_create(NEURAL_NUM, LAYERS);
    CHECK(net);
    CHECK(ct_module_to(net, device) == CT_OK);
    char *text = ct_module_to_string(net);
    CHECK(text);
    printf("%s\n", text);
    free(text);

    /* The seed's loop: one forward pass. */
    for (int epoch = 0; epoch < 1; epoch++) {
        outputs = ct_module_forward(net, inputs);
        CHECK(outputs);
        printf("model outputs.size: [%" PRId64 ", %" PRId64 "]\n", ct_tensor_size(outputs, 0),
               ct_tensor_size(outputs, 1));
        ct_release(outputs);
        outputs = NULL;
    }
    const char *visible = getenv("CTORCH_OPENCL_VISIBLE_DEVICES");
    printf("CTORCH_OPENCL_VISIBLE_DEVICES :%s\n", visible ? visible : "");
    printf("device_count :%d\n", ct_device_count(CT_OPENCL));

    /* Training: the optimizer holds the net's parameter tensors, which ct_module_to moved in
     * place, so it updates them where they are. */
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
