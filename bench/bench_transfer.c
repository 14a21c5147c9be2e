/* Host<->device copies of 256 MB, from pageable and from pinned host memory, against memcpy of
 * the same bytes in the same run (the bus a GPU has is PoCL's memcpy here). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_accelerator.h"

#define TRANSFER_FLOATS (64L * 1024 * 1024) /* 256 MB */

bool ct_bench_accelerator(ct_device *device)
{
    static bool warned;
    ct_device_type types[2] = {CT_CUDA, CT_OPENCL};
    for (int i = 0; i < 2; i++)
        if (ct_device_count(types[i]) > 0) {
            *device = (ct_device){types[i], 0};
            return true;
        }
    if (!warned) fprintf(stderr, "bench: no CUDA or OpenCL device here: accelerator benchmarks skipped\n");
    warned = true;
    return false;
}

typedef struct transfer_case {
    ct_tensor *host, *device;
    bool to_device;
    void *a, *b;
} transfer_case;

static void run_copy(void *context)
{
    transfer_case *c = context;
    if (c->to_device)
        ct_copy_(c->device, c->host);
    else
        ct_copy_(c->host, c->device);
}

static void run_memcpy(void *context)
{
    transfer_case *c = context;
    memcpy(c->a, c->b, TRANSFER_FLOATS * sizeof(float));
}

void ct_bench_transfer(const char *filter, ct_bench_report report, void *context)
{
    static const struct {
        const char *name;
        bool to_device, pinned;
    } cases[] = {
        {"h2d_256MB_pageable", true, false},
        {"h2d_256MB_pinned", true, true},
        {"d2h_256MB_pageable", false, false},
        {"d2h_256MB_pinned", false, true},
    };
    bool any = false;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) any |= ct_bench_selected(filter, cases[i].name);
    ct_device device;
    if (!any || !ct_bench_accelerator(&device)) return;
    int64_t shape[1] = {TRANSFER_FLOATS};
    size_t bytes = TRANSFER_FLOATS * sizeof(float);
    transfer_case c = {0};
    c.a = aligned_alloc(4096, bytes);
    c.b = aligned_alloc(4096, bytes);
    c.device = ct_zeros(shape, 1, CT_F32, device);
    ct_tensor *pageable = ct_ones(shape, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *pinned = ct_empty_pinned(shape, 1, CT_F32);
    if (!c.a || !c.b || !c.device || !pageable || !pinned) {
        fprintf(stderr, "bench transfer: setup failed: %s\n", ct_last_error_message());
    } else {
        memset(c.a, 1, bytes);
        memset(c.b, 2, bytes);
        ct_copy_(pinned, pageable);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (!ct_bench_selected(filter, cases[i].name)) continue;
            ct_bench_result r = {.unit = "GB/s"};
            snprintf(r.name, sizeof r.name, "%s", cases[i].name);
            ct_bench_set_device(&r, device);
            c.to_device = cases[i].to_device;
            c.host = cases[i].pinned ? pinned : pageable;
            double t_memcpy = ct_bench_time(run_memcpy, &c, 1, 7);
            double t_copy = ct_bench_time(run_copy, &c, 1, 7);
            r.value = (double)bytes * 1e-9 / t_copy;
            r.baseline = (double)bytes * 1e-9 / t_memcpy;
            r.ratio = r.value / r.baseline;
            if (cases[i].pinned) {
                snprintf(r.target, sizeof r.target, "ratio >= 0.8");
                r.met = r.ratio >= 0.8;
            } else {
                snprintf(r.target, sizeof r.target, "report");
                r.met = true;
            }
            report(&r, context);
        }
    }
    ct_release(pinned);
    ct_release(pageable);
    ct_release(c.device);
    free(c.a);
    free(c.b);
}
