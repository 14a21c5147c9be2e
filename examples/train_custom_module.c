/* Training a model in C, as one would in PyTorch: a data set in a DataLoader, a custom module,
 * Adam, a checkpoint saved and loaded into a fresh model.
 *
 *   class Net(nn.Module):
 *       def __init__(self):
 *           super().__init__(); self.fc1 = nn.Linear(2, 32); self.fc2 = nn.Linear(32, 2)
 *       def forward(self, x): return self.fc2(torch.relu(self.fc1(x)))
 *   x = torch.rand(512, 2) * 2 - 1; y = (x.pow(2).sum(1) < 0.5).long()   # inside a circle?
 *   loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
 *   net = Net().to(device); opt = torch.optim.Adam(net.parameters(), lr=1e-2)
 *   for epoch in range(20):
 *       for xb, yb in loader:
 *           xb, yb = xb.to(device), yb.to(device)
 *           loss = F.cross_entropy(net(xb), yb); opt.zero_grad(); loss.backward(); opt.step()
 *   torch.save(net.state_dict(), "circle.pt")
 *   net2 = Net(); net2.load_state_dict(torch.load("circle.pt", map_location="cpu"))
 *
 * It runs on the best device (CTORCH_DEVICE=cpu chooses another) and exits 1 unless the loaded
 * model classifies at least 90% of the points as the trained one did. */
#include <stdio.h>
#include <stdlib.h>

#include "ctorch.h"

/* Net.forward: fc2(relu(fc1(x))). The children are borrowed from the module. */
static ct_tensor *net_forward(ct_module *self, const ct_tensor *x)
{
    ct_scope_push();
    ct_tensor *h = ct_relu(ct_module_forward(ct_module_child(self, "fc1"), x));
    ct_tensor *out = ct_module_forward(ct_module_child(self, "fc2"), h);
    ct_scope_keep(out); /* hand the result to the caller's scope; h is released by the pop */
    ct_scope_pop();
    return out;
}

/* Net.__init__: a custom module with two registered children. */
static ct_module *net_new(void)
{
    ct_module *net = ct_module_create("Net", net_forward, NULL, NULL);
    ct_module *fc1 = ct_linear(2, 32, true), *fc2 = ct_linear(32, 2, true);
    ct_module_register_module(net, "fc1", fc1); /* registration retains: drop ours */
    ct_module_register_module(net, "fc2", fc2);
    ct_module_release(fc1);
    ct_module_release(fc2);
    return net;
}

/* The fraction of the points x whose predicted class is y. */
static double accuracy(ct_module *net, const ct_tensor *x, const ct_tensor *y)
{
    ct_scope_push();
    double correct = -1;
    ct_no_grad_push();
    ct_tensor *predicted = ct_argmax(ct_module_forward(net, x), 1, false);
    ct_no_grad_pop();
    ct_tensor *hits = ct_sum(ct_to_dtype(ct_eq(predicted, y), CT_F32), NULL, 0, false);
    if (ct_item(hits, &correct) != CT_OK)
        correct = -1;
    ct_scope_pop();
    return correct / (double)ct_numel(y);
}

int main(void)
{
    ct_scope_push();
    ct_device device;
    ct_best_device(&device);
    char name[64];
    ct_device_format(device, name, sizeof name);
    ct_manual_seed(0);

    /* x: 512 points in [-1, 1)^2 on the CPU; y: 1 inside the circle of radius^2 0.5, else 0. */
    int64_t shape[2] = {512, 2};
    int sum_dim = 1;
    ct_tensor *x = ct_sub_scalar(ct_mul_scalar(ct_rand(shape, 2, CT_F32, CT_DEVICE_CPU), 2.0), 1.0);
    ct_tensor *y = ct_to_dtype(ct_lt_scalar(ct_sum(ct_mul(x, x), &sum_dim, 1, false), 0.5), CT_I64);
    ct_dataset *data = ct_tensor_dataset((ct_tensor *[]){x, y}, 2);
    ct_data_loader_options lo = ct_data_loader_options_default();
    lo.batch_size = 32;
    lo.shuffle = true;
    lo.device = device; /* batches are copied to the device while the previous one trains */
    ct_data_loader *loader = ct_data_loader_create(data, &lo);

    ct_module *net = net_new();
    ct_module_to(net, device);
    ct_adam_options adam = ct_adam_options_default(1e-2);
    ct_optimizer *opt = ct_optim_adam(net, &adam);
    if (!loader || !net || !opt) {
        fprintf(stderr, "error: %s\n", ct_last_error_message());
        return 1;
    }

    for (int epoch = 0; epoch < 20; epoch++) {
        ct_data_loader_start_epoch(loader, epoch);
        double total = 0;
        int batches = 0;
        ct_status st;
        for (;;) {
            ct_scope_push(); /* the batch and the step's tensors are released by the pop */
            ct_tensor *xb, *yb;
            st = ct_data_loader_next(loader, &xb, &yb);
            if (st != CT_OK) {
                ct_scope_pop();
                break;
            }
            ct_tensor *loss = ct_cross_entropy(ct_module_forward(net, xb), yb, 0.0);
            ct_optimizer_zero_grad(opt);
            double value = 0;
            if (ct_backward(loss) != CT_OK || ct_optimizer_step(opt) != CT_OK ||
                ct_item(loss, &value) != CT_OK) {
                fprintf(stderr, "error: %s\n", ct_last_error_message());
                return 1;
            }
            total += value;
            batches++;
            ct_scope_pop();
        }
        if (st != CT_END_OF_DATA) {
            fprintf(stderr, "error: %s\n", ct_last_error_message());
            return 1;
        }
        if (epoch % 5 == 4)
            printf("epoch %2d  loss %.4f\n", epoch + 1, total / batches);
    }

    /* The checkpoint: safetensors, written atomically; it opens in Python's safetensors too. */
    const char *path = "train_custom_module.safetensors";
    ct_state_dict *sd = ct_module_state_dict(net, NULL);
    if (ct_save(sd, path) != CT_OK) {
        fprintf(stderr, "error: %s\n", ct_last_error_message());
        return 1;
    }
    ct_state_dict_free(sd);

    /* A fresh model on the CPU, loaded with map_location "cpu" wherever the file was saved. */
    ct_module *loaded = net_new();
    ct_state_dict *back = ct_load(path, "cpu");
    if (ct_module_load_state_dict(loaded, back, true, NULL) != CT_OK) {
        fprintf(stderr, "error: %s\n", ct_last_error_message());
        return 1;
    }
    ct_state_dict_free(back);
    remove(path);

    double trained = accuracy(net, ct_to(x, device), ct_to(y, device));
    double reloaded = accuracy(loaded, x, y);
    printf("%s: accuracy %.3f trained, %.3f loaded on the CPU\n", name, trained, reloaded);

    ct_optimizer_free(opt);
    ct_module_release(net);
    ct_module_release(loaded);
    ct_data_loader_free(loader);
    ct_dataset_free(data);
    ct_scope_pop();
    return (reloaded >= 0.9 && reloaded > trained - 0.01) ? 0 : 1;
}
