/* A whole training step of a small MLP (forward, cross-entropy, backward, fused SGD step with
 * momentum, with or without the gradients clipped by their norm first, or a capturable AdamW
 * step), run eagerly or captured once and replayed, shared by
 * tests/graph/ (the CPU, PoCL) and tests/cuda/test_cuda_graphs.c (the stand-in): N replays must
 * leave the very bits N eager steps leave, from the same start on the same batches (and, for
 * AdamW, the bits of N steps of an AdamW that is not capturable). */
#ifndef CT_TEST_GRAPH_STEP_H
#define CT_TEST_GRAPH_STEP_H

#include <math.h>
#include <stdio.h>

#include "backend/backend.h"
#include "test_common.h"

enum { STEP_BATCH = 16, STEP_FEATURES = 12, STEP_HIDDEN = 24, STEP_CLASSES = 5, STEP_BATCHES = 6 };

typedef struct step_model {
    ct_module *net;
    ct_optimizer *optimizer;
    double clip; /* clip_grad_norm_'s max_norm before the step; 0: none */
} step_model;

typedef enum step_optimizer {
    STEP_SGD_MOMENTUM,
    STEP_SGD_CLIPPED, /* small enough a max_norm that every step clips */
    STEP_ADAMW_CAPTURABLE,
    STEP_ADAMW
} step_optimizer;

/* The same weights for a seed on every device (initialised on the CPU, then moved). */
static step_model step_model_new_with(ct_device device, step_optimizer kind)
{
    ct_manual_seed(7);
    step_model m;
    m.net = ct_sequential((ct_module *[]){ct_linear(STEP_FEATURES, STEP_HIDDEN, true), ct_relu_module(),
                                          ct_linear(STEP_HIDDEN, STEP_HIDDEN, true), ct_relu_module(),
                                          ct_linear(STEP_HIDDEN, STEP_CLASSES, true)}, 5);
    assert_non_null(m.net);
    assert_int_equal(ct_module_to(m.net, device), CT_OK);
    ct_sgd_options o = ct_sgd_options_default(0.1);
    o.momentum = 0.9;
    o.weight_decay = 1e-3;
    ct_adam_options adamw = ct_adamw_options_default(1e-2);
    adamw.capturable = kind == STEP_ADAMW_CAPTURABLE;
    bool sgd = kind == STEP_SGD_MOMENTUM || kind == STEP_SGD_CLIPPED;
    m.optimizer = sgd ? ct_optim_sgd(m.net, &o) : ct_optim_adamw(m.net, &adamw);
    m.clip = kind == STEP_SGD_CLIPPED ? 0.05 : 0.0;
    assert_non_null(m.optimizer);
    return m;
}


static void step_model_free(step_model *m)
{
    ct_optimizer_free(m->optimizer);
    ct_module_release(m->net);
}

/* Batch b's inputs and labels on device. */
static void step_batch(int b, ct_device device, ct_tensor **x, ct_tensor **y)
{
    float values[STEP_BATCH * STEP_FEATURES];
    int64_t labels[STEP_BATCH];
    for (int i = 0; i < STEP_BATCH * STEP_FEATURES; i++) values[i] = (float)sin(0.37 * i + 1.3 * b);
    for (int i = 0; i < STEP_BATCH; i++) labels[i] = (i * 7 + b * 3) % STEP_CLASSES;
    ct_tensor *xc = ct_tensor_from_data(values, CT_F32, (int64_t[]){STEP_BATCH, STEP_FEATURES}, 2, CT_DEVICE_CPU);
    ct_tensor *yc = ct_tensor_from_data(labels, CT_I64, (int64_t[]){STEP_BATCH}, 1, CT_DEVICE_CPU);
    *x = ct_to(xc, device);
    *y = ct_to(yc, device);
    assert_non_null(*x);
    assert_non_null(*y);
    ct_release(xc);
    ct_release(yc);
}

/* One step on (x, y): the loss, a new reference (NULL on an error, which stays recorded). */
static ct_tensor *step_run(step_model *m, ct_tensor *x, ct_tensor *y)
{
    ct_scope_push();
    ct_optimizer_zero_grad(m->optimizer);
    ct_tensor *logits = ct_module_forward(m->net, x);
    ct_tensor *loss = ct_cross_entropy(logits, y, 0.0);
    ct_status status = loss ? ct_backward(loss) : ct_last_error();
    if (status == CT_OK && m->clip > 0) {
        ct_tensor *params[16];
        int64_t count = ct_optimizer_param_count(m->optimizer);
        assert_true(count <= 16);
        for (int64_t i = 0; i < count; i++) params[i] = ct_optimizer_param(m->optimizer, i);
        status = ct_clip_grad_norm_(params, count, m->clip, 2.0, NULL);
    }
    if (status == CT_OK) status = ct_optimizer_step(m->optimizer);
    if (status == CT_OK) ct_scope_keep(loss);
    ct_scope_pop();
    return status == CT_OK ? loss : NULL;
}

static void step_expect_same_bits(const ct_tensor *a, const ct_tensor *b, const char *what)
{
    int64_t n = ct_numel(a);
    assert_int_equal(n, ct_numel(b));
    float *va = calloc((size_t)n + 1, sizeof *va), *vb = calloc((size_t)n + 1, sizeof *vb);
    assert_int_equal(ct_tensor_to_array(a, va, (size_t)n * sizeof *va), CT_OK);
    assert_int_equal(ct_tensor_to_array(b, vb, (size_t)n * sizeof *vb), CT_OK);
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&va[i], &vb[i], sizeof *va) != 0)
            fail_msg("%s differs at %lld: %.9g replayed, %.9g eager", what, (long long)i, va[i], vb[i]);
    free(va);
    free(vb);
}

static void step_expect_same_parameters(const step_model *a, const step_model *b)
{
    int64_t count = ct_optimizer_param_count(a->optimizer);
    for (int64_t i = 0; i < count; i++) {
        ct_tensor *pa = ct_optimizer_param(a->optimizer, i), *pb = ct_optimizer_param(b->optimizer, i);
        char what[64];
        snprintf(what, sizeof what, "parameter %lld", (long long)i);
        step_expect_same_bits(pa, pb, what);
        ct_release(pa);
        ct_release(pb);
    }
}

/* STEP_BATCHES steps eagerly, and the same as one warm-up step, a capture and replays, on device:
 * the parameters and the last loss have the same bits. Replays allocate nothing; the capture
 * issues nothing; a replayed step re-issues an eager step's kernels and products but the check of
 * the targets (a host sync the capture skips) where the backend records them
 * (launches_per_replay -1), or is one graph launch where it captures itself (0 kernels through
 * ctorch's launch). */
static void step_check_replay_equals_eager_with(ct_device device, long launches_per_replay,
                                                step_optimizer kind)
{
    ct_tensor *xs[STEP_BATCHES], *ys[STEP_BATCHES];
    for (int b = 0; b < STEP_BATCHES; b++) step_batch(b, device, &xs[b], &ys[b]);

    step_model eager = step_model_new_with(device, kind);
    ct_tensor *eager_loss = NULL;
    uint64_t eager_launches = 0, eager_issued = 0;
    for (int b = 0; b < STEP_BATCHES; b++) {
        ct_release(eager_loss);
        uint64_t before = ct_backend_launch_total(device), issued = 0;
        assert_int_equal(ct_device_kernel_launches(device, &issued), CT_OK);
        eager_loss = step_run(&eager, xs[b], ys[b]);
        if (!eager_loss) fail_msg("eager step %d: %s", b, ct_last_error_message());
        eager_launches = ct_backend_launch_total(device) - before;
        assert_int_equal(ct_device_kernel_launches(device, &eager_issued), CT_OK);
        eager_issued -= issued;
    }

    step_model replayed = step_model_new_with(device, kind);
    ct_tensor *static_x = ct_empty((int64_t[]){STEP_BATCH, STEP_FEATURES}, 2, CT_F32, device);
    ct_tensor *static_y = ct_empty((int64_t[]){STEP_BATCH}, 1, CT_I64, device);
    assert_int_equal(ct_copy_(static_x, xs[0]), CT_OK);
    assert_int_equal(ct_copy_(static_y, ys[0]), CT_OK);
    ct_tensor *warm = step_run(&replayed, static_x, static_y); /* the first step (state), eagerly */
    assert_non_null(warm);
    ct_release(warm);

    ct_graph *graph = ct_graph_new();
    assert_int_equal(ct_graph_begin(graph, device, NULL), CT_OK);
    uint64_t captured_before = ct_backend_launch_total(device), issued_before = 0, issued_captured = 0;
    assert_int_equal(ct_device_kernel_launches(device, &issued_before), CT_OK);
    ct_tensor *static_loss = step_run(&replayed, static_x, static_y);
    if (!static_loss) fail_msg("captured step: %s", ct_last_error_message());
    if (ct_graph_end(graph) != CT_OK) fail_msg("ct_graph_end: %s", ct_last_error_message());
    assert_int_equal(ct_backend_launch_total(device) - captured_before, 0); /* nothing ran */
    assert_int_equal(ct_device_kernel_launches(device, &issued_captured), CT_OK);
    assert_int_equal(issued_captured - issued_before, 0);

    ct_memory_stats before, after;
    assert_int_equal(ct_memory_stats_get(device, &before), CT_OK);
    for (int b = 1; b < STEP_BATCHES; b++) {
        assert_int_equal(ct_copy_(static_x, xs[b]), CT_OK);
        assert_int_equal(ct_copy_(static_y, ys[b]), CT_OK);
        uint64_t launched = ct_backend_launch_total(device), issued = 0, issued_after = 0;
        assert_int_equal(ct_device_kernel_launches(device, &issued), CT_OK);
        if (ct_graph_replay(graph) != CT_OK) fail_msg("replay %d: %s", b, ct_last_error_message());
        launched = ct_backend_launch_total(device) - launched;
        assert_int_equal(ct_device_kernel_launches(device, &issued_after), CT_OK);
        /* kernels and products re-issued, or one graph launch */
        assert_int_equal(issued_after - issued, launches_per_replay < 0 ? eager_issued - 1 : 1);
        /* an eager step's, but for the check of the targets' range (a host sync the capture skips) */
        long expected = launches_per_replay < 0 ? (long)eager_launches - 1 : launches_per_replay;
        if ((long)launched != expected)
            fail_msg("replay %d made %llu launches; expected %ld (an eager step: %llu)", b,
                     (unsigned long long)launched, expected, (unsigned long long)eager_launches);
    }
    assert_int_equal(ct_memory_stats_get(device, &after), CT_OK);
    assert_int_equal(after.device_allocations, before.device_allocations);
    assert_int_equal(after.allocated, before.allocated);
    assert_int_equal(after.cache_hits, before.cache_hits);
    assert_true(ct_graph_pool_bytes_held(graph) > 0);

    step_expect_same_parameters(&replayed, &eager);
    step_expect_same_bits(static_loss, eager_loss, "the last loss");
    /* every replay counted a step: a capturable AdamW's on the device, SGD's on the host (issue 26) */
    assert_int_equal(ct_optimizer_steps(replayed.optimizer), STEP_BATCHES);
    ct_state_dict *saved = ct_optimizer_state_dict(replayed.optimizer); /* the checkpoint's count too */
    ct_tensor *saved_step = ct_state_dict_get(saved, "state.0.step");
    double saved_steps = 0;
    assert_int_equal(ct_item(saved_step, &saved_steps), CT_OK);
    assert_true(saved_steps == STEP_BATCHES);
    ct_release(saved_step);
    ct_state_dict_free(saved);
    if (kind == STEP_ADAMW_CAPTURABLE) {
        /* the bits of an AdamW that is not capturable */
        step_model plain = step_model_new_with(device, STEP_ADAMW);
        for (int b = 0; b < STEP_BATCHES; b++) {
            ct_tensor *loss = step_run(&plain, xs[b], ys[b]);
            assert_non_null(loss);
            ct_release(loss);
        }
        step_expect_same_parameters(&replayed, &plain);
        step_model_free(&plain);
    }

    ct_release(static_loss);
    ct_graph_free(graph);
    ct_release(static_x);
    ct_release(static_y);
    ct_release(eager_loss);
    step_model_free(&eager);
    step_model_free(&replayed);
    for (int b = 0; b < STEP_BATCHES; b++) {
        ct_release(xs[b]);
        ct_release(ys[b]);
    }
}

/* SGD with momentum, the same clipped, and a capturable AdamW: */
enum { STEP_KINDS_CHECKED = 3 };
static void step_check_replay_equals_eager(ct_device device, long launches_per_replay)
{
    step_check_replay_equals_eager_with(device, launches_per_replay, STEP_SGD_MOMENTUM);
    step_check_replay_equals_eager_with(device, launches_per_replay, STEP_SGD_CLIPPED);
    step_check_replay_equals_eager_with(device, launches_per_replay, STEP_ADAMW_CAPTURABLE);
}

#endif
