/* The accelerator path's costs: launching a small op, and matmul/add/exp/sum on the device
 * against the same calls on ctorch's CPU backend (PoCL runs on these same cores, so the ratios
 * show the overhead of the accelerator path, not a GPU's speed). */
#include <stdio.h>

#include "bench.h"
#include "bench_accelerator.h"

#define LAUNCHES 1000

typedef struct device_case {
    ct_device device;
    ct_tensor *a, *b;
    const char *op;
} device_case;

static ct_tensor *run_op(const char *op, ct_tensor *a, ct_tensor *b)
{
    switch (op[0]) {
    case 'm': return ct_matmul(a, b);
    case 'a': return ct_add(a, b);
    case 'e': return ct_exp(a);
    default: return ct_sum(a, NULL, 0, false);
    }
}

static void run_once(void *context)
{
    device_case *c = context;
    ct_release(run_op(c->op, c->a, c->b));
    ct_synchronize(c->device);
}

static void run_many_small(void *context)
{
    device_case *c = context;
    for (int i = 0; i < LAUNCHES; i++) ct_release(ct_add(c->a, c->b));
    ct_synchronize(c->device);
}

/* Times op on the accelerator and on the CPU with the same inputs. */
static void compare_with_cpu(const char *name, const char *op, const int64_t *shape, int ndim,
                             double work, const char *unit, ct_device device, ct_bench_report report,
                             void *context)
{
    ct_manual_seed(3);
    device_case cpu = {CT_DEVICE_CPU, ct_rand(shape, ndim, CT_F32, CT_DEVICE_CPU),
                       ct_rand(shape, ndim, CT_F32, CT_DEVICE_CPU), op};
    device_case dev = {device, ct_to(cpu.a, device), ct_to(cpu.b, device), op};
    if (cpu.a && cpu.b && dev.a && dev.b) {
        ct_bench_result r = {.unit = unit};
        snprintf(r.name, sizeof r.name, "%s", name);
        ct_bench_set_device(&r, device);
        double t_cpu = ct_bench_time(run_once, &cpu, 1, 5);
        double t_dev = ct_bench_time(run_once, &dev, 1, 5);
        r.value = work / t_dev;
        r.baseline = work / t_cpu;
        r.ratio = r.value / r.baseline;
        snprintf(r.target, sizeof r.target, "report");
        r.met = true;
        report(&r, context);
    } else {
        fprintf(stderr, "bench %s: setup failed: %s\n", name, ct_last_error_message());
    }
    ct_release(cpu.a);
    ct_release(cpu.b);
    ct_release(dev.a);
    ct_release(dev.b);
}

void ct_bench_device_ops(const char *filter, ct_bench_report report, void *context)
{
    static const char *const names[] = {"device_launch_overhead", "device_matmul_f32_1024",
                                        "device_matmul_f32_2048", "device_add_f32_16M",
                                        "device_exp_f32_16M", "device_sum_f32_16M"};
    bool any = false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) any |= ct_bench_selected(filter, names[i]);
    ct_device device;
    if (!any || !ct_bench_accelerator(&device)) return;

    if (ct_bench_selected(filter, "device_launch_overhead")) {
        int64_t four[1] = {4};
        device_case cpu = {CT_DEVICE_CPU, ct_ones(four, 1, CT_F32, CT_DEVICE_CPU),
                           ct_ones(four, 1, CT_F32, CT_DEVICE_CPU), "add"};
        device_case dev = {device, ct_to(cpu.a, device), ct_to(cpu.b, device), "add"};
        ct_bench_result r = {.unit = "us"};
        snprintf(r.name, sizeof r.name, "device_launch_overhead");
        ct_bench_set_device(&r, device);
        double t_cpu = ct_bench_time(run_many_small, &cpu, 1, 5) / LAUNCHES;
        double t_dev = ct_bench_time(run_many_small, &dev, 1, 5) / LAUNCHES;
        r.value = t_dev * 1e6;
        r.baseline = t_cpu * 1e6;
        r.ratio = t_cpu / t_dev;
        snprintf(r.target, sizeof r.target, "report");
        r.met = true;
        report(&r, context);
        ct_release(cpu.a);
        ct_release(cpu.b);
        ct_release(dev.a);
        ct_release(dev.b);
    }
    static const int sizes[] = {1024, 2048};
    for (int i = 0; i < 2; i++) {
        char name[64];
        snprintf(name, sizeof name, "device_matmul_f32_%d", sizes[i]);
        if (!ct_bench_selected(filter, name)) continue;
        int64_t shape[2] = {sizes[i], sizes[i]};
        compare_with_cpu(name, "matmul", shape, 2, 2.0 * sizes[i] * sizes[i] * (double)sizes[i] * 1e-9,
                         "GFLOP/s", device, report, context);
    }
    int64_t big[1] = {16L * 1024 * 1024};
    double gb = 16.0 * 1024 * 1024 * 4 * 1e-9;
    if (ct_bench_selected(filter, "device_add_f32_16M"))
        compare_with_cpu("device_add_f32_16M", "add", big, 1, 3 * gb, "GB/s", device, report, context);
    if (ct_bench_selected(filter, "device_exp_f32_16M"))
        compare_with_cpu("device_exp_f32_16M", "exp", big, 1, 2 * gb, "GB/s", device, report, context);
    if (ct_bench_selected(filter, "device_sum_f32_16M"))
        compare_with_cpu("device_sum_f32_16M", "sum", big, 1, gb, "GB/s", device, report, context);
}
