/* The optimizer step of the digits mlp (`ctorch train`'s: Linear(64, 256) ReLU Linear(256, 10),
 * Adam) on --device, fused (the default) against a step per parameter (ct_optimizer_set_fused
 * false, PyTorch's foreach=False), from the gradients of one backward at batch 32:
 *   optim_step_launches_mlp  kernel launches per step (ct_device_kernel_launches), ratio the
 *                            per-parameter count over the fused one
 *   optim_step_host_us_mlp   the host's time per ct_optimizer_step call, not waiting for the
 *                            device (what issuing the step costs; on the CPU the kernels run in
 *                            the call), ratio the per-parameter time over the fused one. */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "train.h"

#define STEPS_PER_RUN 50

typedef struct optim_case {
    ct_device device;
    ct_module *model;
    ct_optimizer *optimizer;
} optim_case;

static bool setup(optim_case *c, ct_device device)
{
    memset(c, 0, sizeof *c);
    c->device = device;
    ct_manual_seed(0);
    c->model = ct_train_model_create(CT_TRAIN_MLP, 64, 10);
    if (!c->model || ct_module_to(c->model, device) != CT_OK) return false;
    ct_adam_options adam = ct_adam_options_default(1e-3);
    c->optimizer = ct_optim_adam(c->model, &adam);
    if (!c->optimizer) return false;
    int64_t x_shape[2] = {32, 64}, y_shape[1] = {32};
    ct_scope_push();
    ct_tensor *x = ct_rand(x_shape, 2, CT_F32, device);
    ct_tensor *y = ct_randint(0, 10, y_shape, 1, CT_I64, device);
    ct_tensor *loss = ct_cross_entropy(ct_module_forward(c->model, x), y, 0.0);
    bool ok = loss && ct_backward(loss) == CT_OK && ct_optimizer_step(c->optimizer) == CT_OK; /* the state */
    ct_scope_pop();
    return ok;
}

/* Launches of one step, fused and per parameter. */
static bool count_launches(optim_case *c, uint64_t launches[2])
{
    for (int way = 0; way < 2; way++) {
        uint64_t before = 0, after = 0;
        if (ct_optimizer_set_fused(c->optimizer, way == 0) != CT_OK ||
            ct_device_kernel_launches(c->device, &before) != CT_OK || ct_optimizer_step(c->optimizer) != CT_OK ||
            ct_device_kernel_launches(c->device, &after) != CT_OK)
            return false;
        launches[way] = after - before;
    }
    return true;
}

/* The median host seconds per step, fused and per parameter, over runs of STEPS_PER_RUN steps
 * that alternate between the two (so that a busy machine slows both alike). */
static bool time_steps(optim_case *c, double seconds[2])
{
    enum { RUNS = 11 };
    double runs[2][RUNS];
    int count = ct_bench_config_get()->quick ? 3 : RUNS;
    for (int r = 0; r < count; r++)
        for (int way = 0; way < 2; way++) {
            if (ct_optimizer_set_fused(c->optimizer, way == 0) != CT_OK || ct_synchronize(c->device) != CT_OK)
                return false;
            double start = ct_bench_now_seconds();
            for (int s = 0; s < STEPS_PER_RUN; s++)
                if (ct_optimizer_step(c->optimizer) != CT_OK) return false;
            runs[way][r] = (ct_bench_now_seconds() - start) / STEPS_PER_RUN;
        }
    for (int way = 0; way < 2; way++) seconds[way] = ct_bench_median(runs[way], count);
    return ct_synchronize(c->device) == CT_OK;
}

void ct_bench_optimizer_step(const char *filter, ct_bench_report report, void *context)
{
    bool want_launches = ct_bench_selected(filter, "optim_step_launches_mlp");
    bool want_time = ct_bench_selected(filter, "optim_step_host_us_mlp");
    if (!want_launches && !want_time) return;
    ct_device device = ct_bench_config_get()->device;
    optim_case c;
    uint64_t launches[2] = {0, 0};
    double seconds[2] = {0, 0};
    bool ok = setup(&c, device) && count_launches(&c, launches) && time_steps(&c, seconds);
    if (!ok) fprintf(stderr, "bench optim_step: FAILED: %s\n", ct_last_error_message());
    if (want_launches) {
        ct_bench_result r = {.unit = "launches"};
        snprintf(r.name, sizeof r.name, "optim_step_launches_mlp");
        ct_bench_set_device(&r, device);
        r.value = (double)launches[0];
        r.baseline = (double)launches[1];
        r.ratio = launches[0] ? r.baseline / r.value : 0.0;
        int64_t params = ok ? ct_optimizer_param_count(c.optimizer) : 0;
        snprintf(r.target, sizeof r.target, "value <= %lld", (long long)((params + 7) / 8));
        r.met = ok && launches[0] <= (uint64_t)((params + 7) / 8);
        report(&r, context);
    }
    if (want_time) {
        ct_bench_result r = {.unit = "us"};
        snprintf(r.name, sizeof r.name, "optim_step_host_us_mlp");
        ct_bench_set_device(&r, device);
        r.value = seconds[0] * 1e6;
        r.baseline = seconds[1] * 1e6;
        r.ratio = seconds[0] > 0 ? seconds[1] / seconds[0] : 0.0;
        snprintf(r.target, sizeof r.target, "report");
        r.met = ok;
        report(&r, context);
    }
    ct_optimizer_free(c.optimizer);
    ct_module_release(c.model);
}
