/* DataParallel: a training step (forward, MSE, backward, SGD) of an MLP over two devices of one
 * type against the same step over the first device alone, with the same global batch. On PoCL
 * the two devices share the machine's cores, so the ratio shows DataParallel's costs (threads,
 * broadcast, gather, the reduce-add of gradients), not a speed-up; on two real GPUs it is the
 * speed-up. */
#include <stdio.h>

#include "bench.h"
#include "bench_accelerator.h"

typedef struct dp_case {
    ct_module *model, *wrapper;
    ct_optimizer *optimizer;
    ct_tensor *x, *target;
    ct_device device;
} dp_case;

static void run_step(void *context)
{
    dp_case *c = context;
    ct_scope_push();
    ct_optimizer_zero_grad(c->optimizer);
    ct_tensor *y = ct_module_forward(c->wrapper, c->x);
    ct_tensor *loss = ct_mse_loss(y, c->target);
    if (loss && ct_backward(loss) == CT_OK) ct_optimizer_step(c->optimizer);
    ct_scope_pop();
    ct_synchronize(c->device);
}

/* The same model (seeded) on devices[0], wrapped over `count` devices; false on failure. */
static bool make_case(dp_case *c, const ct_device *devices, int count, int64_t batch, int64_t in,
                      int64_t hidden, int64_t out)
{
    ct_manual_seed(12);
    c->device = devices[0];
    c->model = ct_sequential((ct_module *[]){ct_linear(in, hidden, true), ct_relu_module(),
                                             ct_linear(hidden, out, true)}, 3);
    if (!c->model || ct_module_to(c->model, devices[0]) != CT_OK) return false;
    c->wrapper = ct_data_parallel(c->model, devices, count, devices[0]);
    ct_sgd_options options = ct_sgd_options_default(0.01);
    c->optimizer = c->wrapper ? ct_optim_sgd(c->wrapper, &options) : NULL;
    ct_tensor *x = ct_randn((int64_t[]){batch, in}, 2, CT_F32, CT_DEVICE_CPU);
    c->x = x ? ct_pin_memory(x) : NULL; /* the input comes from the host, as from a loader */
    ct_release(x);
    c->target = ct_randn((int64_t[]){batch, out}, 2, CT_F32, devices[0]);
    return c->optimizer && c->x && c->target;
}

static void free_case(dp_case *c)
{
    ct_optimizer_free(c->optimizer);
    ct_module_release(c->wrapper);
    ct_module_release(c->model);
    ct_release(c->x);
    ct_release(c->target);
}

static void compare(const char *name, const ct_device *devices, int64_t batch, int64_t in,
                    int64_t hidden, int64_t out, ct_bench_report report, void *context)
{
    dp_case one = {0}, two = {0};
    if (make_case(&one, devices, 1, batch, in, hidden, out) && make_case(&two, devices, 2, batch, in, hidden, out)) {
        ct_bench_result r = {.unit = "ms"};
        snprintf(r.name, sizeof r.name, "%s", name);
        double t_one = ct_bench_time(run_step, &one, 3, 9);
        double t_two = ct_bench_time(run_step, &two, 3, 9);
        r.value = t_two * 1e3;
        r.baseline = t_one * 1e3;
        r.ratio = t_one / t_two;
        snprintf(r.target, sizeof r.target, "report");
        r.met = true;
        report(&r, context);
    } else {
        fprintf(stderr, "bench %s: setup failed: %s\n", name, ct_last_error_message());
    }
    free_case(&one);
    free_case(&two);
}

void ct_bench_data_parallel(const char *filter, ct_bench_report report, void *context)
{
    bool small = ct_bench_selected(filter, "data_parallel_step_small"),
         large = ct_bench_selected(filter, "data_parallel_step_mlp512");
    ct_device first;
    if ((!small && !large) || !ct_bench_accelerator(&first)) return;
    if (ct_device_count(first.type) < 2) {
        fprintf(stderr, "bench: data_parallel needs two %s devices (with PoCL: "
                "POCL_DEVICES=\"pthread pthread\"): skipped\n", ct_device_type_name(first.type));
        return;
    }
    const ct_device devices[2] = {{first.type, 0}, {first.type, 1}};
    /* a small step, dominated by DataParallel's own costs; a larger one, dominated by GEMMs */
    if (small) compare("data_parallel_step_small", devices, 64, 32, 64, 10, report, context);
    if (large) compare("data_parallel_step_mlp512", devices, 256, 256, 512, 10, report, context);
}
