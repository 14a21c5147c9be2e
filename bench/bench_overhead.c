/* The fixed cost of one op on --device: 1000 float32 adds of 4 elements, then a wait for the
 * device, in microseconds per add. On the CPU against the same adds in plain C with each output
 * malloc'ed and freed (what any library call must at least do); elsewhere alone
 * (bench/torch_bench.py times PyTorch's the same way). */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

#define CALLS 1000

typedef struct overhead_case {
    ct_device device;
    ct_tensor *a, *b;
    float ra[4], rb[4];
    volatile float sink;
} overhead_case;

static void ctorch_adds(void *context)
{
    overhead_case *c = context;
    for (int i = 0; i < CALLS; i++) ct_release(ct_add(c->a, c->b));
    ct_synchronize(c->device);
}

static void plain_adds(void *context)
{
    overhead_case *c = context;
    for (int i = 0; i < CALLS; i++) {
        float *out = malloc(4 * sizeof *out);
        if (!out) return;
        for (int k = 0; k < 4; k++) out[k] = c->ra[k] + c->rb[k];
        c->sink = out[3];
        free(out);
    }
}

void ct_bench_overhead(const char *filter, ct_bench_report report, void *context)
{
    ct_bench_result r = {.unit = "us"};
    snprintf(r.name, sizeof r.name, "op_overhead_add_4");
    if (!ct_bench_selected(filter, r.name)) return;
    overhead_case c = {.device = ct_bench_config_get()->device, .ra = {1, 2, 3, 4}, .rb = {5, 6, 7, 8}};
    ct_bench_set_device(&r, c.device);
    int64_t shape[1] = {4};
    c.a = ct_tensor_from_data(c.ra, CT_F32, shape, 1, c.device);
    c.b = ct_tensor_from_data(c.rb, CT_F32, shape, 1, c.device);
    if (c.a && c.b) {
        double t_ct = ct_bench_time(ctorch_adds, &c, 3, 21) / CALLS;
        r.value = t_ct * 1e6;
        if (c.device.type == CT_CPU) {
            double t_plain = ct_bench_time(plain_adds, &c, 3, 21) / CALLS;
            r.baseline = t_plain * 1e6;
            r.ratio = t_plain / t_ct;
            snprintf(r.target, sizeof r.target, "value <= 1 us");
            r.met = r.value <= 1.0;
        } else {
            snprintf(r.target, sizeof r.target, "report");
            r.met = true;
        }
        report(&r, context);
    } else {
        fprintf(stderr, "bench %s: setup failed: %s\n", r.name, ct_last_error_message());
    }
    ct_release(c.a);
    ct_release(c.b);
}
