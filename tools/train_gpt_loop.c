/* The step loop of `ctorch train --model gpt`, after llm.c's train_gpt2 and nanoGPT's train.py:
 * each step takes grad_accum micro-batches (their gradients summed, each loss divided by the
 * count; under DDP the all-reduce runs on the last one only, as no_sync), clips the gradients to
 * a norm, sets the step's warm-up cosine rate and steps AdamW (weight decay on the 2-D weights
 * only, as nanoGPT's configure_optimizers). The step's loss is read every step (it is printed),
 * the validation loss every eval_every steps and after the last. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "train_gpt.h"

ct_gpt_train_config ct_gpt_train_config_default(void)
{
    /* nanoGPT's shakespeare_char recipe, made small enough to train in minutes on 2 cores */
    ct_gpt_train_config c = {
        .model = {.vocab_size = CT_GPT_TEXT_VOCAB, .padded_vocab_size = CT_GPT_TEXT_VOCAB, .block_size = 128,
                  .n_layer = 4, .n_head = 4, .n_embd = 128, .dropout = 0.0, .bias = true},
        .steps = 600,
        .batch_size = 16,
        .seq_len = 128,
        .grad_accum = 1,
        .lr = 1e-3,
        .weight_decay = 0.1,
        .beta1 = 0.9,
        .beta2 = 0.99,
        .schedule = true,
        .warmup = 50,
        .min_lr_factor = 0.1,
        .clip_grad = 1.0,
        .eval_every = 200,
        .eval_batches = 20,
        .order = CT_TOKEN_ORDER_RANDOM,
        .val_fraction = 0.1,
        .seed = 1337,
        .device = CT_DEVICE_CPU,
        .amp = CT_F32,
    };
    return c;
}

double ct_gpt_train_lr(const ct_gpt_train_config *c, int64_t step)
{
    if (!c->schedule) return c->lr;
    double min_lr = c->lr * c->min_lr_factor;
    if (step < c->warmup) return c->lr * (double)(step + 1) / (double)c->warmup;
    if (step >= c->steps) return min_lr;
    double decay = c->steps > c->warmup ? (double)(step - c->warmup) / (double)(c->steps - c->warmup) : 1.0;
    return min_lr + 0.5 * (1.0 + cos(M_PI * decay)) * (c->lr - min_lr);
}

double ct_gpt_flops_per_token(const ct_gpt_config *m, int64_t parameters, int64_t seq_len)
{
    double n = (double)(parameters - m->block_size * m->n_embd); /* nanoGPT leaves out wpe */
    return 6.0 * n + 12.0 * (double)m->n_layer * (double)seq_len * (double)m->n_embd;
}

/* The training loader of this rank and the validation loader (sequential, the same batches on
 * every rank), on device. */
static ct_status make_loaders(const ct_gpt_train_config *c, const ct_gpt_tokens *tokens, ct_device device,
                              ct_token_loader **train, ct_token_loader **val)
{
    ct_token_loader_options o = ct_token_loader_options_default();
    o.batch_size = c->batch_size;
    o.seq_len = c->seq_len;
    o.order = c->order;
    o.seed = c->seed;
    o.device = device;
    if (c->distributed) {
        o.rank = ct_dist_rank();
        o.world_size = ct_dist_world_size();
    }
    *train = ct_token_loader_create(tokens->train, &o);
    if (!*train) return ct_train_fail_library("--data (training tokens)");
    /* a validation batch is a step's rows (grad_accum x batch_size x ranks): the same batches for
     * the same step, however it is accumulated or shared */
    o.batch_size = c->batch_size * c->grad_accum * o.world_size;
    o.order = CT_TOKEN_ORDER_SEQUENTIAL;
    o.rank = 0;
    o.world_size = 1;
    *val = ct_token_loader_create(tokens->val ? tokens->val : tokens->train, &o);
    if (!*val) return ct_train_fail_library("--data (validation tokens; --val-fraction)");
    return CT_OK;
}

ct_status ct_gpt_train_check(const ct_gpt_train_config *c, const ct_gpt_tokens *tokens)
{
    if (ct_gpt_config_check(&c->model) != CT_OK) return ct_train_fail_library("the model's configuration");
    if (c->seq_len < 1 || c->seq_len > c->model.block_size)
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--seq-len %lld: the model's block size is %lld; give 1 "
                             "to %lld", (long long)c->seq_len, (long long)c->model.block_size,
                             (long long)c->model.block_size);
    if (c->steps < 1 || c->batch_size < 1 || c->grad_accum < 1 || c->grad_accum > 64 || !(c->lr > 0))
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--steps, --batch-size and --lr must be positive, "
                             "--grad-accum from 1 to 64");
    if (c->amp != CT_F32 && c->data_parallel_count > 0)
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--amp with --data-parallel: autocast is per thread and "
                             "DataParallel's replicas run in threads of their own; use mpirun");
    if (c->graph && (c->amp == CT_F16 || c->data_parallel_count > 0 || c->distributed))
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--graph captures the training step once and replays it; "
                             "it needs one device (no DataParallel or DDP) and no --amp fp16 (the gradient "
                             "scaler decides on the host whether to step)");
    if (c->data_parallel_count > 0 && c->batch_size < c->data_parallel_count)
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "--batch-size %lld is split over %d devices: give at least "
                             "one row each", (long long)c->batch_size, c->data_parallel_count);
    if (!tokens) return CT_OK;
    /* the loaders' own checks of the data's size, on the host */
    ct_token_loader *train = NULL, *val = NULL;
    ct_status status = make_loaders(c, tokens, CT_DEVICE_CPU, &train, &val);
    ct_token_loader_free(train);
    ct_token_loader_free(val);
    return status;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- one step ---- */
typedef struct stepper {
    const ct_gpt_train_config *config;
    ct_module *model, *net; /* net: model, or its DataParallel or DDP wrapper */
    ct_optimizer *optimizer;
    ct_tensor **params;
    int64_t param_count;
    ct_grad_scaler *scaler;
    int64_t rows; /* per micro-batch and rank */
} stepper;

/* The mean loss of (x, y) [rows, T] under the run's autocast. The plain model computes its loss
 * itself; a wrapper gives the logits, gathered on the first device. */
static ct_tensor *forward_loss(const stepper *s, ct_module *net, const ct_tensor *x, const ct_tensor *y)
{
    ct_dtype amp = s->config->amp;
    if (amp != CT_F32 && ct_autocast_push(ct_tensor_device(x).type, amp) != CT_OK) return NULL;
    ct_tensor *loss = NULL;
    if (net == s->model) {
        if (ct_gpt_forward(net, x, y, NULL, &loss) != CT_OK) loss = NULL;
    } else {
        ct_tensor *logits = ct_module_forward(net, x);
        int64_t rows = ct_numel(y), vocab = s->config->model.vocab_size;
        loss = ct_cross_entropy(ct_reshape(logits, (int64_t[]){rows, vocab}, 2), ct_reshape(y, &rows, 1), 0.0);
    }
    if (amp != CT_F32) ct_autocast_pop();
    return loss;
}

/* The update of one step on x_all, y_all [grad_accum * rows, T]; *loss is the mean of the
 * micro-batches' losses (a tensor of the caller's scope). */
static ct_status update(const stepper *s, const ct_tensor *x_all, const ct_tensor *y_all, ct_tensor **loss)
{
    int64_t K = s->config->grad_accum;
    bool ddp = s->config->distributed;
    ct_optimizer_zero_grad(s->optimizer);
    ct_tensor *total = NULL;
    for (int64_t k = 0; k < K; k++) {
        const ct_tensor *x = K == 1 ? x_all : ct_narrow(x_all, 0, k * s->rows, s->rows);
        const ct_tensor *y = K == 1 ? y_all : ct_narrow(y_all, 0, k * s->rows, s->rows);
        bool quiet = ddp && k + 1 < K; /* the all-reduce on the last micro-batch only */
        if (quiet && ct_ddp_no_sync_push(s->net) != CT_OK) return ct_train_fail_library("no_sync");
        ct_tensor *micro = forward_loss(s, s->net, x, y);
        if (!micro) return ct_train_fail_library("the forward pass");
        ct_tensor *scaled = K == 1 ? micro : ct_div_scalar(micro, (double)K);
        if (scaled && s->scaler) scaled = ct_grad_scaler_scale(s->scaler, scaled);
        ct_status status = scaled ? ct_backward(scaled) : ct_last_error();
        if (quiet) ct_ddp_no_sync_pop(s->net);
        if (status != CT_OK) return ct_train_fail_library("the backward pass");
        ct_no_grad_push();
        ct_tensor *detached = ct_detach(micro);
        total = total ? ct_add(total, detached) : detached;
        ct_no_grad_pop();
        if (!total) return ct_train_fail_library("summing the loss");
    }
    if (s->config->clip_grad > 0) {
        if (s->scaler && ct_grad_scaler_unscale_(s->scaler, s->optimizer) != CT_OK)
            return ct_train_fail_library("unscaling the gradients");
        if (ct_clip_grad_norm_(s->params, s->param_count, s->config->clip_grad, 2.0, NULL) != CT_OK)
            return ct_train_fail_library("clipping the gradients");
    }
    if (s->scaler) {
        if (ct_grad_scaler_step(s->scaler, s->optimizer, NULL) != CT_OK || ct_grad_scaler_update(s->scaler) != CT_OK)
            return ct_train_fail_library("the optimizer step");
    } else if (ct_optimizer_step(s->optimizer) != CT_OK) {
        return ct_train_fail_library("the optimizer step");
    }
    *loss = K == 1 ? total : ct_div_scalar(total, (double)K);
    return *loss ? CT_OK : ct_train_fail_library("the step's loss");
}

/* ---- --graph: the step captured on static inputs and replayed (tools/train_graph.c's recipe) ---- */
typedef struct graph_step {
    ct_tensor *x, *y, *loss; /* static */
    ct_stream *side;
    ct_event *ordered;
    ct_graph *graph;
    bool warmed, captured;
    double lr; /* the rate the graph holds */
} graph_step;

static ct_status graph_body(const stepper *s, graph_step *g)
{
    ct_scope_push();
    ct_tensor *loss = NULL;
    ct_status status = update(s, g->x, g->y, &loss);
    if (status == CT_OK && ct_copy_(g->loss, loss) != CT_OK) status = ct_train_fail_library("--graph: the loss");
    ct_scope_pop();
    return status;
}

static ct_status order(graph_step *g, ct_stream *waiting, ct_stream *recorded)
{
    ct_status status = ct_event_record(g->ordered, recorded);
    return status == CT_OK ? ct_stream_wait_event(waiting, g->ordered) : status;
}

/* A replay keeps the rate of its capture: a changed rate captures again. */
static ct_status graph_run(const stepper *s, graph_step *g, const ct_tensor *x, const ct_tensor *y, double lr,
                           const ct_tensor **loss)
{
    if (ct_copy_(g->x, x) != CT_OK || ct_copy_(g->y, y) != CT_OK)
        return ct_train_fail_library("--graph: refilling the static batch");
    if (g->captured && lr != g->lr) {
        ct_graph_free(g->graph);
        g->graph = ct_graph_new();
        g->captured = false;
        if (!g->graph) return ct_train_fail_library("--graph: a new graph");
    }
    ct_device device = s->config->device;
    ct_stream *current = ct_current_stream(device);
    ct_status status = CT_OK;
    if (g->captured) {
        status = ct_graph_replay(g->graph);
    } else {
        status = order(g, g->side, current);
        if (status == CT_OK) status = ct_set_stream(g->side);
        if (status == CT_OK && !g->warmed) {
            status = graph_body(s, g);
            g->warmed = status == CT_OK;
        } else if (status == CT_OK) {
            status = ct_graph_begin(g->graph, device, g->side);
            if (status == CT_OK) status = graph_body(s, g);
            ct_status ended = ct_graph_end(g->graph);
            if (status == CT_OK) status = ended;
            if (status == CT_OK) status = ct_graph_replay(g->graph); /* the capture ran nothing */
            g->captured = status == CT_OK;
            g->lr = lr;
        }
        ct_status back = current ? ct_set_stream(current) : ct_set_default_stream(device);
        if (status == CT_OK) status = back;
        if (status == CT_OK) status = order(g, current, g->side);
    }
    if (status != CT_OK) return ct_train_fail_library("--graph: the captured step");
    *loss = g->loss;
    return CT_OK;
}

static void graph_free(graph_step *g)
{
    ct_graph_free(g->graph);
    ct_release(g->x);
    ct_release(g->y);
    ct_release(g->loss);
    ct_event_destroy(g->ordered);
    ct_stream_destroy(g->side);
}

static ct_status graph_create(const ct_gpt_train_config *c, int64_t rows, graph_step *g)
{
    int64_t shape[2] = {rows, c->seq_len};
    g->x = ct_zeros(shape, 2, CT_I64, c->device);
    g->y = ct_zeros(shape, 2, CT_I64, c->device);
    g->loss = ct_zeros(shape, 0, CT_F32, c->device);
    g->side = ct_stream_create(c->device);
    g->ordered = ct_event_create(c->device);
    g->graph = ct_graph_new();
    if (!g->x || !g->y || !g->loss || !g->side || !g->ordered || !g->graph)
        return ct_train_fail_library("--graph: the static tensors");
    return CT_OK;
}

/* ---- the optimizer ---- */
/* AdamW over two groups: weight decay on the parameters of 2+ dims (matmuls, embeddings), none on
 * biases and LayerNorms (nanoGPT's configure_optimizers); capturable under --graph. */
static ct_status make_optimizer(const ct_gpt_train_config *c, ct_module *model, stepper *s)
{
    ct_named_tensors *named = ct_module_named_parameters(model);
    if (!named) return ct_train_fail_library("the model's parameters");
    s->param_count = named->count;
    s->params = calloc((size_t)named->count + 1, sizeof *s->params);
    ct_tensor **decay = calloc((size_t)named->count + 1, sizeof *decay);
    ct_tensor **no_decay = calloc((size_t)named->count + 1, sizeof *no_decay);
    int64_t n_decay = 0, n_no_decay = 0;
    for (int64_t i = 0; s->params && decay && no_decay && i < named->count; i++) {
        ct_tensor *p = named->tensors[i];
        s->params[i] = p;
        if (ct_tensor_ndim(p) >= 2) decay[n_decay++] = p;
        else no_decay[n_no_decay++] = p;
    }
    ct_param_group groups[2] = {ct_param_group_of(decay, n_decay), ct_param_group_of(no_decay, n_no_decay)};
    groups[0].weight_decay = c->weight_decay;
    groups[1].weight_decay = 0.0;
    ct_adam_options options = ct_adamw_options_default(c->lr);
    options.beta1 = c->beta1;
    options.beta2 = c->beta2;
    options.eps = 1e-8;
    options.capturable = c->graph;
    s->optimizer = s->params && decay && no_decay ? ct_optim_adamw_groups(groups, 2, &options) : NULL;
    free(decay);
    free(no_decay);
    ct_status status = s->optimizer ? CT_OK : ct_train_fail_library("making AdamW");
    /* The optimizer holds its own references; the list's go, the pointers stay valid. */
    ct_named_tensors_free(named);
    return status;
}

/* ---- evaluation ---- */
/* The mean loss of eval_batches batches from the validation loader's start. */
static ct_status evaluate(ct_module *model, ct_token_loader *val, const ct_gpt_train_config *c, double *loss)
{
    *loss = NAN;
    if (ct_token_loader_set_position(val, 0) != CT_OK) return ct_train_fail_library("the validation batches");
    ct_module_eval(model);
    ct_no_grad_push();
    ct_scope_push();
    ct_tensor *sum = NULL;
    stepper s = {.config = c, .model = model};
    ct_status status = CT_OK;
    for (int64_t b = 0; b < c->eval_batches && status == CT_OK; b++) {
        ct_tensor *x = NULL, *y = NULL;
        ct_tensor *l = ct_token_loader_next(val, &x, &y) == CT_OK ? forward_loss(&s, model, x, y) : NULL;
        sum = l ? (sum ? ct_add(sum, l) : l) : NULL;
        if (!sum) status = ct_train_fail_library("the validation loss");
    }
    double total = 0;
    if (status == CT_OK && ct_item(sum, &total) != CT_OK) status = ct_train_fail_library("reading the validation loss");
    ct_scope_pop();
    ct_no_grad_pop();
    ct_module_train(model, true);
    if (status == CT_OK) *loss = total / (double)c->eval_batches;
    return status;
}

ct_status ct_gpt_evaluate(ct_module *model, const ct_gpt_tokens *tokens, const ct_gpt_train_config *c,
                          double *loss)
{
    ct_token_loader *train = NULL, *val = NULL;
    ct_status status = make_loaders(c, tokens, ct_module_device(model), &train, &val);
    if (status == CT_OK) status = evaluate(model, val, c, loss);
    ct_token_loader_free(train);
    ct_token_loader_free(val);
    return status;
}

/* ---- the run ---- */
void ct_gpt_train_state_free(ct_gpt_train_state *state)
{
    if (!state) return;
    ct_state_dict_free(state->optimizer);
    ct_release(state->rng);
    *state = (ct_gpt_train_state){0};
}

static ct_status keep_state(const stepper *s, int64_t step, ct_gpt_train_state *state)
{
    *state = (ct_gpt_train_state){.step = step};
    state->optimizer = ct_optimizer_state_dict(s->optimizer);
    state->rng = ct_get_rng_state();
    if (!state->optimizer || !state->rng) return ct_train_fail_library("keeping the training state");
    if (s->scaler && ct_grad_scaler_state(s->scaler, &state->amp_scale, &state->amp_growth_tracker) != CT_OK)
        return ct_train_fail_library("keeping the gradient scaler's state");
    return CT_OK;
}

static ct_status restore(const stepper *s, const ct_gpt_train_state *r)
{
    if (ct_optimizer_load_state_dict(s->optimizer, r->optimizer) != CT_OK)
        return ct_train_fail_library("--resume: the optimizer's state");
    if (ct_set_rng_state(r->rng) != CT_OK) return ct_train_fail_library("--resume: the generators");
    if (s->scaler && ct_grad_scaler_load_state(s->scaler, r->amp_scale, r->amp_growth_tracker) != CT_OK)
        return ct_train_fail_library("--resume: the gradient scaler");
    return CT_OK;
}

/* The step's batch for this rank: grad_accum of the loader's batches, one after another. */
static ct_status step_batch(ct_token_loader *loader, int64_t micro_steps, ct_tensor **x, ct_tensor **y)
{
    ct_tensor *xs[64], *ys[64];
    if (micro_steps == 1) return ct_token_loader_next(loader, x, y) == CT_OK ? CT_OK : ct_train_fail_library("the batch");
    for (int64_t k = 0; k < micro_steps; k++)
        if (ct_token_loader_next(loader, &xs[k], &ys[k]) != CT_OK) return ct_train_fail_library("the batch");
    *x = ct_cat((const ct_tensor *const *)xs, (int)micro_steps, 0);
    *y = ct_cat((const ct_tensor *const *)ys, (int)micro_steps, 0);
    return *x && *y ? CT_OK : ct_train_fail_library("the batch");
}

static ct_status train_steps(ct_module *model, ct_module *net, const ct_gpt_tokens *tokens,
                             const ct_gpt_train_config *c, const ct_gpt_observer *observer,
                             ct_gpt_train_result *result)
{
    int world = c->distributed ? ct_dist_world_size() : 1;
    stepper s = {.config = c, .model = model, .net = net, .rows = c->batch_size};
    ct_token_loader *train = NULL, *val = NULL;
    ct_status status = make_loaders(c, tokens, c->device, &train, &val);
    if (status == CT_OK) status = make_optimizer(c, model, &s);
    if (status == CT_OK && c->amp == CT_F16 && !(s.scaler = ct_grad_scaler_new(NULL)))
        status = ct_train_fail_library("making the gradient scaler");
    if (status == CT_OK && c->resume) status = restore(&s, c->resume);
    graph_step g = {0};
    if (status == CT_OK && c->graph) status = graph_create(c, c->grad_accum * c->batch_size, &g);
    double tokens_per_step = (double)(c->grad_accum * c->batch_size * c->seq_len * world);
    int64_t first = c->resume ? c->resume->step : 0;
    if (status == CT_OK && ct_token_loader_set_position(train, first * c->grad_accum) != CT_OK)
        status = ct_train_fail_library("--resume: the batches");
    ct_module_train(net, true);
    for (int64_t step = first; step < c->steps && status == CT_OK; step++) {
        double start = now_seconds(), lr = ct_gpt_train_lr(c, step);
        if (ct_optimizer_set_lr(s.optimizer, lr) != CT_OK) status = ct_train_fail_library("setting the rate");
        ct_scope_push();
        ct_tensor *xt = NULL, *yt = NULL, *loss = NULL;
        const ct_tensor *step_loss = NULL;
        if (status == CT_OK) status = step_batch(train, c->grad_accum, &xt, &yt);
        if (status == CT_OK && c->graph) {
            status = graph_run(&s, &g, xt, yt, lr, &step_loss);
        } else if (status == CT_OK) {
            status = update(&s, xt, yt, &loss);
            step_loss = loss;
        }
        double value = NAN;
        if (status == CT_OK && ct_item(step_loss, &value) != CT_OK) status = ct_train_fail_library("reading the loss");
        ct_scope_pop();
        if (status == CT_OK && c->distributed) {
            status = ct_train_sum_over_ranks(&value, 1);
            value /= world;
        }
        if (status != CT_OK) break;
        double seconds = now_seconds() - start;
        ct_gpt_step info = {.step = step, .steps = c->steps, .loss = value, .lr = lr, .val_loss = NAN,
                            .seconds = seconds, .tokens_per_second = seconds > 0 ? tokens_per_step / seconds : 0};
        result->train_seconds += seconds;
        result->final_loss = value;
        result->steps_run++;
        bool last = step + 1 == c->steps, evaluating = last || (c->eval_every > 0 && (step + 1) % c->eval_every == 0);
        if (!isfinite(value)) {
            status = ct_train_fail(CT_ERR_INVALID_ARGUMENT, "step %lld: the loss is %g: training diverged (try a "
                                   "smaller --lr); stopped, nothing saved", (long long)step, value);
            break;
        }
        if (evaluating) {
            status = evaluate(model, val, c, &info.val_loss);
            ct_module_train(net, true);
            result->val_loss = info.val_loss;
        }
        if (status == CT_OK && observer && observer->on_step) observer->on_step(observer->context, &info);
        if (status == CT_OK && evaluating && observer && observer->on_state) {
            ct_gpt_train_state now;
            status = keep_state(&s, step + 1, &now);
            if (status == CT_OK) status = observer->on_state(observer->context, model, &now);
            ct_gpt_train_state_free(&now);
        }
    }
    if (status == CT_OK && result->steps_run == 0) status = evaluate(model, val, c, &result->val_loss);
    ct_token_loader_free(train);
    ct_token_loader_free(val);
    graph_free(&g);
    ct_grad_scaler_free(s.scaler);
    ct_optimizer_free(s.optimizer);
    free(s.params);
    double total_tokens = tokens_per_step * (double)result->steps_run;
    result->tokens_per_second = result->train_seconds > 0 ? total_tokens / result->train_seconds : 0;
    return status;
}

ct_status ct_gpt_train_run(ct_module *model, const ct_gpt_tokens *tokens, const ct_gpt_train_config *c,
                           const ct_gpt_observer *observer, ct_gpt_train_result *result)
{
    *result = (ct_gpt_train_result){.val_loss = NAN, .final_loss = NAN};
    ct_status status = ct_gpt_train_check(c, tokens);
    if (status != CT_OK) return status;
    if (c->distributed && (status = ct_train_check_distributed(&(ct_train_config){.distributed = true})) != CT_OK)
        return status;
    if (!c->resume) ct_manual_seed(c->seed);
    if (ct_module_to(model, c->device) != CT_OK) return ct_train_fail_library("moving the model");
    ct_module *net = model;
    if (c->data_parallel_count > 0) {
        net = ct_data_parallel(model, c->data_parallel, c->data_parallel_count, c->device);
        if (!net) return ct_train_fail_library("wrapping the model in DataParallel");
    } else if (c->distributed) {
        net = ct_distributed_data_parallel(model, NULL);
        if (!net) return ct_train_fail_library("wrapping the model in DistributedDataParallel");
    }
    status = train_steps(model, net, tokens, c, observer, result);
    if (net != model) ct_module_release(net);
    return status;
}
