/* `ctorch train --graph`: the training step captured once and replayed per batch (ctorch/graph.h),
 * after PyTorch's whole-step recipe: static input tensors refilled before each replay, a warm-up
 * step on a side stream (a first step makes the optimizer's state; Adam is made capturable, its
 * step count on the device, by train_loop.c), the capture on that stream, then a replay for every
 * full batch (captured again when a per-epoch schedule changes the learning rate, which a replay
 * keeps). The step is the eager loop's update (autocast, clipping on the device included),
 * then sums its loss and correct count into two static tensors inside the graph, so a replayed
 * step costs two input copies and one replay. */
#include <stdlib.h>

#include "train.h"

struct ct_train_graph {
    ct_device device;
    ct_train_update_fn update;
    void *context;
    int64_t batch_size;
    ct_tensor *x, *y;                   /* the static inputs */
    ct_tensor *loss_sum, *correct_sum;  /* summed by every step, read and zeroed per epoch */
    ct_tensor *zero_loss, *zero_correct;
    ct_tensor *loss;                    /* the last step's mean loss (the graph's output) */
    ct_stream *side;
    ct_event *ordered;
    ct_graph *graph;
    bool warmed, captured;
};

ct_status ct_train_graph_check(const ct_train_config *config)
{
    const char *why = ct_train_schedule_steps_per_batch(&config->schedule)
                          ? "no --lr-schedule that changes the rate every batch (onecycle: a replay keeps "
                            "the rate of its capture, and a per-epoch schedule captures again when it "
                            "changes)"
                      : config->amp == CT_F16 ? "no --amp fp16 (the gradient scaler decides on the host "
                                                "whether to step)"
                      : config->data_parallel_count > 0 || config->distributed ? "one device (no "
                                                                                 "DataParallel or DDP)"
                                                                               : NULL;
    if (!why) return CT_OK;
    return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--graph captures the training step once and replays "
                         "it; it needs %s", why);
}

ct_status ct_train_graph_create(ct_train_update_fn update, void *context, const ct_train_config *config,
                                int64_t features, ct_train_graph **out)
{
    *out = NULL;
    ct_train_graph *g = calloc(1, sizeof *g);
    if (!g) return ct_train_fail(CT_ERR_OUT_OF_MEMORY, "--graph: no host memory");
    g->device = config->device;
    g->update = update;
    g->context = context;
    g->batch_size = config->batch_size;
    int64_t scalar[1] = {1};
    g->x = ct_zeros((int64_t[]){config->batch_size, features}, 2, CT_F32, g->device);
    g->y = ct_zeros((int64_t[]){config->batch_size}, 1, CT_I64, g->device);
    g->loss_sum = ct_zeros(scalar, 0, CT_F32, g->device);
    g->correct_sum = ct_zeros(scalar, 0, CT_I64, g->device);
    g->zero_loss = ct_zeros(scalar, 0, CT_F32, g->device);
    g->zero_correct = ct_zeros(scalar, 0, CT_I64, g->device);
    g->loss = ct_zeros(scalar, 0, CT_F32, g->device);
    g->side = ct_stream_create(g->device);
    g->ordered = ct_event_create(g->device);
    g->graph = ct_graph_new();
    *out = g;
    if (!g->x || !g->y || !g->loss_sum || !g->correct_sum || !g->zero_loss || !g->zero_correct || !g->loss || !g->side ||
        !g->ordered || !g->graph)
        return ct_train_fail_library("--graph: the static tensors");
    return CT_OK;
}

void ct_train_graph_free(ct_train_graph *g)
{
    if (!g) return;
    ct_graph_free(g->graph);
    ct_release(g->loss);
    ct_release(g->x);
    ct_release(g->y);
    ct_release(g->loss_sum);
    ct_release(g->correct_sum);
    ct_release(g->zero_loss);
    ct_release(g->zero_correct);
    ct_event_destroy(g->ordered);
    ct_stream_destroy(g->side);
    free(g);
}

const ct_tensor *ct_train_graph_batch(const ct_train_graph *g) { return g->x; }

/* sum += addend, in place (a copy back into the static tensor, so that a graph can hold it). */
static bool add_into(ct_tensor *sum, ct_tensor *addend)
{
    ct_tensor *next = ct_add(sum, addend);
    return next && ct_copy_(sum, next) == CT_OK;
}

/* The step on the static inputs: what the warm-up runs and the capture records. */
static ct_status step(ct_train_graph *g)
{
    ct_scope_push();
    ct_tensor *logits = NULL, *loss = NULL;
    ct_status status = g->update(g->context, g->x, g->y, &logits, &loss);
    if (status == CT_OK) {
        ct_no_grad_push();
        bool summed = add_into(g->loss_sum, ct_mul_scalar(ct_detach(loss), (double)g->batch_size)) &&
                      add_into(g->correct_sum, ct_sum(ct_eq(ct_argmax(logits, 1, false), g->y), NULL, 0, false));
        ct_no_grad_pop();
        status = summed ? CT_OK : ct_last_error();
    }
    if (status == CT_OK) status = ct_copy_(g->loss, loss); /* the graph's output */
    ct_scope_pop();
    return status;
}

/* `waiting` waits for what `recorded` (NULL: the default stream) has queued so far. */
static ct_status order(ct_train_graph *g, ct_stream *waiting, ct_stream *recorded)
{
    ct_status status = ct_event_record(g->ordered, recorded);
    return status == CT_OK ? ct_stream_wait_event(waiting, g->ordered) : status;
}

ct_status ct_train_graph_step(ct_train_graph *g, const ct_tensor *x, const ct_tensor *y, const ct_tensor **loss)
{
    if (ct_copy_(g->x, x) != CT_OK || ct_copy_(g->y, y) != CT_OK)
        return ct_train_fail_library("--graph: refilling the static batch");
    ct_stream *current = ct_current_stream(g->device);
    ct_status status = CT_OK;
    if (!g->captured) {
        /* Warm-up, then the capture, on the side stream, ordered after the copies and before what
         * follows on the current stream. */
        status = order(g, g->side, current);
        if (status == CT_OK) status = ct_set_stream(g->side);
        if (status == CT_OK && !g->warmed) {
            status = step(g);
            g->warmed = status == CT_OK;
        } else if (status == CT_OK) {
            status = ct_graph_begin(g->graph, g->device, g->side);
            if (status == CT_OK) status = step(g);
            ct_status ended = ct_graph_end(g->graph); /* reports an abandoned capture too */
            if (status == CT_OK) status = ended;
            if (status == CT_OK) status = ct_graph_replay(g->graph); /* the capture ran nothing */
            g->captured = status == CT_OK;
        }
        ct_status back = current ? ct_set_stream(current) : ct_set_default_stream(g->device);
        if (status == CT_OK) status = back;
        if (status == CT_OK) status = order(g, current, g->side);
    } else {
        status = ct_graph_replay(g->graph);
    }
    if (status != CT_OK) return ct_train_fail_library("--graph: the captured step");
    *loss = g->loss;
    return CT_OK;
}

ct_status ct_train_graph_recapture(ct_train_graph *g)
{
    ct_graph_free(g->graph);
    g->graph = ct_graph_new();
    g->captured = false; /* warmed stays: the optimizer's state exists */
    return g->graph ? CT_OK : ct_train_fail_library("--graph: a new graph");
}

ct_status ct_train_graph_take_sums(ct_train_graph *g, const ct_tensor *eager_loss, const ct_tensor *eager_correct,
                                   double *loss, int64_t *correct)
{
    double sum = 0;
    int64_t count = 0;
    /* The ragged last batch's sums added in float32 on the device, as the eager loop adds every
     * batch: the same epoch loss, bit for bit, as without --graph. */
    ct_scope_push();
    const ct_tensor *loss_sum = eager_loss ? ct_add(g->loss_sum, eager_loss) : g->loss_sum;
    const ct_tensor *correct_sum = eager_correct ? ct_add(g->correct_sum, eager_correct) : g->correct_sum;
    bool read = loss_sum && correct_sum && ct_item(loss_sum, &sum) == CT_OK &&
                ct_item_int64(correct_sum, &count) == CT_OK;
    ct_scope_pop();
    if (!read || ct_copy_(g->loss_sum, g->zero_loss) != CT_OK || ct_copy_(g->correct_sum, g->zero_correct) != CT_OK)
        return ct_train_fail_library("--graph: reading the epoch's loss");
    *loss = sum;
    *correct = count;
    return CT_OK;
}
