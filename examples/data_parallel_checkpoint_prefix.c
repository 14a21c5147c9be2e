/* The C twin of a PyTorch tutorial's snippet, error 2: a state dict saved from a DataParallel model, loaded into
 * the plain model.
 *
 *   net = nn.DataParallel(FooNet(neural_num=3, layers=3))
 *   torch.save(net.state_dict(), path_state_dict)   # names "module.linears.0.weight", ...
 *
 *   net = FooNet(neural_num=3, layers=3)
 *   net.load_state_dict(torch.load(path_state_dict))
 *   RuntimeError: Error(s) in loading state_dict for FooNet: Missing key(s) in state_dict:
 *   "linears.0.weight", "linears.1.weight", "linears.2.weight". Unexpected key(s) in
 *   state_dict: "module.linears.0.weight", "module.linears.1.weight", "module.linears.2.weight".
 *
 *   # the fix: drop the prefix
 *   new_state_dict = OrderedDict()
 *   for k, v in state_dict_load.items():
 *       namekey = k[7:] if k.startswith('module.') else k
 *       new_state_dict[namekey] = v
 *   net.load_state_dict(new_state_dict)
 *
 * DataParallel (ct_data_parallel, here over every visible device of the type; see
 * data_parallel_training.c) keeps the model as its child "module", so the names its state
 * dict has start with "module.". The fix is ct_state_dict_strip_prefix(sd, "module.")
 * (ct_state_dict_add_prefix goes the other way, to load a plain checkpoint into a wrapped model);
 * or save the wrapped model's own state dict, as `ctorch train --data-parallel --save` does. A
 * non-strict load would not fail but load nothing: it only logs the same message as a warning.
 * The file goes in a temporary folder, removed at the end. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctorch.h"

/* Reports a failed call and leaves through the clean-up at the end of main. */
#define CHECK(expr)                                                                              \
    do {                                                                                         \
        if (!(expr)) {                                                                           \
            fprintf(stderr, "error: %s\n", ct_last_error_message());                            \
            goto done;                                                                           \
        }                                                                                        \
    } while (0)

enum { NEURAL_NUM = 3, LAYERS = 3 };

/* FooNet.forward, as in examples/data_parallel_training.c: every linear layer and a ReLU. */
static ct_tensor *foonet_forward(ct_module *self, const ct_tensor *x)
{
    printf("batch size in forward: %" PRId64 "\n", ct_tensor_size(x, 0));
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

static void print_names(const char *title, const ct_state_dict *sd)
{
    printf("%s:", title);
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++) printf(" %s", ct_state_dict_name_at(sd, i));
    printf("\n");
}

int main(void)
{
    int exit_code = 1;
    ct_module *trained = NULL, *wrapped = NULL, *net = NULL;
    ct_state_dict *sd = NULL, *loaded = NULL;
    char dir[512] = "", path[600] = "";
    ct_scope_push(); /* the tensors of main are released by the pop at the end */

    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/ctorch-prefix-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "error: cannot make a temporary folder from '%s': %s\n", dir, strerror(errno));
        dir[0] = '\0';
        goto done;
    }
    snprintf(path, sizeof path, "%s/foonet_dataparallel.safetensors", dir);

    ct_device device = ct_device_count(CT_OPENCL) > 0 ? (ct_device){CT_OPENCL, 0} : CT_DEVICE_CPU;
    char name[CT_DEVICE_STRING_MAX];
    printf("device: %s\n", ct_device_format(device, name, sizeof name));

    /* The model trained under DataParallel, its outputs, and its checkpoint:
     * net = nn.DataParallel(FooNet(3, 3)); torch.save(net.state_dict(), path). */
    ct_manual_seed(5);
    trained = foonet_create(NEURAL_NUM, LAYERS);
    CHECK(trained);
    CHECK(ct_module_to(trained, device) == CT_OK);
    wrapped = ct_data_parallel(trained, NULL, 0, device);
    CHECK(wrapped);
    int64_t shape[2] = {4, NEURAL_NUM};
    ct_tensor *inputs = ct_randn(shape, 2, CT_F32, device);
    ct_tensor *expected = ct_module_forward(trained, inputs); /* its own weights, on one device */
    CHECK(expected);
    sd = ct_module_state_dict(wrapped, NULL);
    CHECK(sd);
    CHECK(ct_save(sd, path) == CT_OK);
    print_names("saved", sd);

    /* A new FooNet (other initial weights) and the checkpoint, loaded as it is: every name
     * differs, so the strict load fails, reports them all and changes nothing. */
    ct_manual_seed(6);
    net = foonet_create(NEURAL_NUM, LAYERS);
    CHECK(net);
    CHECK(ct_module_to(net, device) == CT_OK);
    loaded = ct_load(path, NULL);
    CHECK(loaded);
    ct_load_report report;
    ct_status status = ct_module_load_state_dict(net, loaded, true, &report);
    if (status != CT_ERR_INVALID_ARGUMENT || report.missing != LAYERS || report.unexpected != LAYERS ||
        report.loaded != 0) {
        fprintf(stderr, "error: the strict load should fail with %d missing and %d unexpected names "
                "(status %s, %" PRId64 " missing, %" PRId64 " unexpected)\n", LAYERS, LAYERS,
                ct_status_name(status), report.missing, report.unexpected);
        goto done;
    }
    printf("\nloading it as it is fails:\n  %s\n", report.message);

    /* The fix: strip the prefix, and load again. */
    CHECK(ct_state_dict_strip_prefix(loaded, "module.") == CT_OK);
    print_names("\nafter ct_state_dict_strip_prefix(sd, \"module.\")", loaded);
    CHECK(ct_module_load_state_dict(net, loaded, true, &report) == CT_OK);
    printf("loaded %" PRId64 " tensors\n", report.loaded);

    /* The loaded model computes what the saved one did. */
    ct_tensor *outputs = ct_module_forward(net, inputs);
    CHECK(outputs);
    ct_tensor *largest = ct_max(ct_abs(ct_sub(outputs, expected)), NULL, 0, false);
    double difference = 0;
    CHECK(largest && ct_item(largest, &difference) == CT_OK);
    printf("its outputs differ from the saved model's by %.2g\n", difference);
    if (difference != 0) {
        fprintf(stderr, "error: the same weights on the same device should give the same outputs\n");
        goto done;
    }
    exit_code = 0;

done:
    ct_module_release(wrapped);
    ct_module_release(trained);
    ct_module_release(net);
    ct_state_dict_free(loaded);
    ct_state_dict_free(sd);
    ct_scope_pop();
    if (dir[0]) {
        remove(path);
        if (rmdir(dir) != 0) fprintf(stderr, "warning: cannot remove '%s': %s\n", dir, strerror(errno));
    }
    return exit_code;
}
