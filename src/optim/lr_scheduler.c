/* Learning-rate schedules (torch.optim.lr_scheduler): StepLR, CosineAnnealingLR, LinearLR,
 * OneCycleLR and llm.c's warm-up then cosine, each a closed form of the step count, so that a
 * restored count gives the same values as an uninterrupted run. Each parameter group's value comes
 * from its own initial lr (PyTorch's base_lrs). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "optim/optimizer_internal.h"

/* A status-returning function's NULL argument: reported as such even after an earlier failure. */
static ct_status null_argument(const char *function, const char *argument)
{
    return ct_error(CT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", function, argument);
}

typedef enum schedule_kind {
    STEP_LR, COSINE_ANNEALING, LINEAR, ONE_CYCLE, WARMUP_COSINE, EXPONENTIAL, MULTI_STEP, LAMBDA, SEQUENTIAL,
    CHAINED, PLATEAU
} schedule_kind;

static const char *const kind_names[] = {"StepLR",       "CosineAnnealingLR", "LinearLR",  "OneCycleLR",
                                         "WarmupCosine", "ExponentialLR",     "MultiStepLR", "LambdaLR",
                                         "SequentialLR", "ChainedScheduler",  "ReduceLROnPlateau"};

struct ct_lr_scheduler {
    schedule_kind kind;
    ct_optimizer *optimizer; /* a reference (o->refcount) */
    int64_t group_count;
    double *base_lrs; /* per group */
    int64_t last_epoch;
    double last_lr;   /* group 0's */
    /* StepLR: step_size, gamma; CosineAnnealingLR: t_max, eta_min; LinearLR: total_iters and the
     * two factors; OneCycleLR: total_steps, max_lr and its options; WarmupCosine: total_steps,
     * warmup_steps (a), min_lr_factor (b). */
    int64_t period;
    double a, b;
    ct_one_cycle_options one_cycle;
    /* MultiStepLR's milestones; SequentialLR's (child_count - 1 of them) */
    int64_t *milestones;
    int64_t milestone_count;
    /* LambdaLR's factor */
    ct_lr_lambda_fn lambda;
    void *lambda_context;
    /* SequentialLR's and ChainedScheduler's schedulers (theirs: freed with them) */
    ct_lr_scheduler **children;
    int64_t child_count;
    /* ReduceLROnPlateau's options and state */
    ct_plateau_options plateau;
    double best;
    int64_t bad_epochs, cooldown_left;
};

/* PyTorch's OneCycleLR annealing from start to end at pct in [0, 1]. */
static double anneal(const ct_lr_scheduler *s, double start, double end, double pct)
{
    if (s->one_cycle.linear_anneal) return (end - start) * pct + start;
    return end + (start - end) / 2.0 * (cos(M_PI * pct) + 1.0);
}

/* OneCycleLR's two phases: initial -> max_lr until step pct_start * total - 1, then -> min. */
static double one_cycle_lr(const ct_lr_scheduler *s, int64_t t)
{
    double max_lr = s->a, initial = max_lr / s->one_cycle.div_factor;
    double min_lr = initial / s->one_cycle.final_div_factor;
    double phase1_end = s->one_cycle.pct_start * (double)s->period - 1.0;
    double phase2_end = (double)s->period - 1.0;
    double step = (double)t;
    if (step <= phase1_end) return anneal(s, initial, max_lr, step / phase1_end);
    return anneal(s, max_lr, min_lr, (step - phase1_end) / (phase2_end - phase1_end));
}

/* llm.c's schedule (train_gpt2.cu, get_learning_rate): warm-up, then cosine to min_lr; min_lr past
 * the end. */
static double warmup_cosine_lr(const ct_lr_scheduler *s, double base_lr, int64_t t)
{
    double warmup = s->a, total = (double)s->period, min_lr = base_lr * s->b;
    if ((double)t < warmup) return base_lr * ((double)t + 1.0) / warmup;
    double decay_ratio = ((double)t - warmup) / (total - warmup);
    if (decay_ratio > 1.0) decay_ratio = 1.0;
    double coeff = 0.5 * (1.0 + cos(M_PI * decay_ratio));
    return min_lr + coeff * (base_lr - min_lr);
}

/* How many of the sorted milestones are <= t (Python's bisect_right). */
static int64_t milestones_passed(const ct_lr_scheduler *s, int64_t t)
{
    int64_t n = 0;
    while (n < s->milestone_count && s->milestones[n] <= t) n++;
    return n;
}

static double lr_at(const ct_lr_scheduler *s, int64_t g, int64_t t)
{
    double base_lr = s->base_lrs[g];
    switch (s->kind) {
    case EXPONENTIAL: return base_lr * pow(s->b, (double)t);
    case MULTI_STEP: return base_lr * pow(s->b, (double)milestones_passed(s, t));
    case LAMBDA: return base_lr * s->lambda(t, g, s->lambda_context);
    case SEQUENTIAL: {
        int64_t i = milestones_passed(s, t);
        return lr_at(s->children[i], g, i == 0 ? t : t - s->milestones[i - 1]);
    }
    case CHAINED: {
        /* the product of the schedules' factors, as PyTorch's chainable forms compound */
        double lr = base_lr;
        for (int64_t c = 0; c < s->child_count && base_lr != 0.0; c++) lr *= lr_at(s->children[c], g, t) / base_lr;
        return lr;
    }
    case PLATEAU: return ct_optimizer_group_lr(s->optimizer, g);
    case STEP_LR: return base_lr * pow(s->b, (double)(t / s->period));
    case COSINE_ANNEALING: {
        /* the factor in [0, 1] first: (base_lr - eta_min) * 2 would overflow near DBL_MAX */
        double factor = (1.0 + cos(M_PI * (double)t / (double)s->period)) / 2.0;
        return s->b + (base_lr - s->b) * factor;
    }
    case LINEAR: {
        double done = (double)(t < s->period ? t : s->period) / (double)s->period;
        return base_lr * (s->a + (s->b - s->a) * done);
    }
    case ONE_CYCLE: return one_cycle_lr(s, t);
    case WARMUP_COSINE: return warmup_cosine_lr(s, base_lr, t);
    }
    return base_lr;
}

/* Sets the count to t and each group's learning rate to the schedule's value there; all values
 * are checked before any is set. */
static ct_status apply(const char *function, ct_lr_scheduler *s, int64_t t)
{
    for (int64_t g = 0; g < s->group_count; g++) {
        double lr = lr_at(s, g, t);
        if (!(lr >= 0.0) || isinf(lr))
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s's learning rate at step %lld of group %lld is %g "
                            "(from an initial lr of %g); the schedule's arguments give no usable rate there",
                            function, kind_names[s->kind], (long long)t, (long long)g, lr, s->base_lrs[g]);
    }
    for (int64_t g = 0; g < s->group_count; g++) {
        ct_status status = ct_optimizer_set_group_lr(s->optimizer, g, lr_at(s, g, t));
        if (status != CT_OK) return status;
    }
    s->last_epoch = t;
    s->last_lr = lr_at(s, 0, t);
    return CT_OK;
}

static ct_status create(const char *function, ct_optimizer *optimizer, ct_lr_scheduler *init,
                        ct_lr_scheduler **out)
{
    *out = NULL;
    ct_lr_scheduler *s = malloc(sizeof *s);
    double *base_lrs = malloc((size_t)optimizer->group_count * sizeof *base_lrs);
    if (!s || !base_lrs) {
        free(s);
        free(base_lrs);
        free(init->milestones);
        return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    }
    *s = *init;
    s->optimizer = optimizer;
    s->group_count = optimizer->group_count;
    s->base_lrs = base_lrs;
    for (int64_t g = 0; g < s->group_count; g++) base_lrs[g] = ct_optimizer_group_lr(optimizer, g);
    /* a composite's schedules all start from the first one's rates (PyTorch's initial_lr), not
     * from what the later ones found when the earlier had set theirs */
    for (int64_t c = 0; c < s->child_count; c++)
        for (int64_t g = 0; g < s->group_count; g++) {
            base_lrs[g] = s->children[0]->base_lrs[g];
            if (c > 0) s->children[c]->base_lrs[g] = base_lrs[g];
        }
    ct_status status = apply(function, s, 0);
    if (status != CT_OK) {
        free(base_lrs);
        free(s->milestones);
        free(s);
        return status;
    }
    optimizer->refcount++; /* freed with the last of the optimizer's holders */
    *out = s;
    return CT_OK;
}

/* The checks every constructor makes first: out and optimizer given. */
static ct_status check_common(const char *function, const ct_optimizer *optimizer, ct_lr_scheduler **out)
{
    if (!out) return null_argument(function, "out");
    *out = NULL;
    if (!optimizer) return null_argument(function, "optimizer");
    return CT_OK;
}

ct_status ct_lr_scheduler_step_lr(ct_optimizer *optimizer, int64_t step_size, double gamma, ct_lr_scheduler **out)
{
    const char *function = "ct_lr_scheduler_step_lr";
    ct_status status = check_common(function, optimizer, out);
    if (status != CT_OK) return status;
    if (step_size < 1)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: step_size is %lld; it must be at least 1", function,
                        (long long)step_size);
    if (!(gamma > 0.0) || !isfinite(gamma))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: gamma is %g; it must be a positive number", function, gamma);
    return create(function, optimizer, &(ct_lr_scheduler){.kind = STEP_LR, .period = step_size, .b = gamma}, out);
}

ct_status ct_lr_scheduler_cosine_annealing(ct_optimizer *optimizer, int64_t t_max, double eta_min,
                                           ct_lr_scheduler **out)
{
    const char *function = "ct_lr_scheduler_cosine_annealing";
    ct_status status = check_common(function, optimizer, out);
    if (status != CT_OK) return status;
    if (t_max < 1)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: t_max is %lld; it must be at least 1", function,
                        (long long)t_max);
    if (!(eta_min >= 0.0) || !isfinite(eta_min))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: eta_min is %g; it must be a number >= 0", function, eta_min);
    return create(function, optimizer,
                  &(ct_lr_scheduler){.kind = COSINE_ANNEALING, .period = t_max, .b = eta_min}, out);
}

ct_status ct_lr_scheduler_linear(ct_optimizer *optimizer, double start_factor, double end_factor,
                                 int64_t total_iters, ct_lr_scheduler **out)
{
    const char *function = "ct_lr_scheduler_linear";
    ct_status status = check_common(function, optimizer, out);
    if (status != CT_OK) return status;
    /* PyTorch's wording and bounds. */
    if (!(start_factor > 0.0 && start_factor <= 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Starting multiplicative factor expected to be greater "
                        "than 0 and less or equal to 1, got %g", function, start_factor);
    if (!(end_factor >= 0.0 && end_factor <= 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Ending multiplicative factor expected to be between 0 "
                        "and 1, got %g", function, end_factor);
    if (total_iters < 1)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: total_iters is %lld; it must be at least 1", function,
                        (long long)total_iters);
    return create(function, optimizer,
                  &(ct_lr_scheduler){.kind = LINEAR, .period = total_iters, .a = start_factor, .b = end_factor},
                  out);
}

ct_one_cycle_options ct_one_cycle_options_default(void)
{
    return (ct_one_cycle_options){.pct_start = 0.3, .div_factor = 25.0, .final_div_factor = 1e4,
                                  .linear_anneal = false};
}

ct_status ct_lr_scheduler_one_cycle(ct_optimizer *optimizer, double max_lr, int64_t total_steps,
                                    const ct_one_cycle_options *options, ct_lr_scheduler **out)
{
    const char *function = "ct_lr_scheduler_one_cycle";
    ct_status status = check_common(function, optimizer, out);
    if (status != CT_OK) return status;
    ct_one_cycle_options o = options ? *options : ct_one_cycle_options_default();
    if (!(max_lr > 0.0) || !isfinite(max_lr))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: max_lr is %g; it must be a positive number", function, max_lr);
    if (total_steps < 2)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: total_steps is %lld; it must be at least 2", function,
                        (long long)total_steps);
    if (!(o.pct_start > 0.0 && o.pct_start < 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Expected float between 0 and 1 pct_start, but got %g",
                        function, o.pct_start);
    /* Both phases must span at least one step, or an annealing fraction divides by zero. */
    double phase1_end = o.pct_start * (double)total_steps - 1.0;
    if (!(phase1_end > 0.0 && phase1_end < (double)total_steps - 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: pct_start %g of %lld steps leaves a phase without steps; "
                        "give more steps or a pct_start nearer 0.5", function, o.pct_start, (long long)total_steps);
    if (!(o.div_factor > 0.0) || !(o.final_div_factor > 0.0) || !isfinite(o.div_factor) ||
        !isfinite(o.final_div_factor))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: div_factor (%g) and final_div_factor (%g) must be "
                        "positive numbers", function, o.div_factor, o.final_div_factor);
    ct_lr_scheduler init = {.kind = ONE_CYCLE, .period = total_steps, .a = max_lr, .one_cycle = o};
    return create(function, optimizer, &init, out);
}

ct_status ct_lr_scheduler_warmup_cosine(ct_optimizer *optimizer, int64_t warmup_steps, int64_t total_steps,
                                        double min_lr_factor, ct_lr_scheduler **out)
{
    const char *function = "ct_lr_scheduler_warmup_cosine";
    ct_status status = check_common(function, optimizer, out);
    if (status != CT_OK) return status;
    if (warmup_steps < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: warmup_steps is %lld; it must not be negative", function,
                        (long long)warmup_steps);
    if (total_steps <= warmup_steps)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: total_steps is %lld; it must be above warmup_steps (%lld) "
                        "to leave steps to decay over", function, (long long)total_steps, (long long)warmup_steps);
    if (!(min_lr_factor >= 0.0 && min_lr_factor <= 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: min_lr_factor is %g; it must be in [0, 1] (the final lr "
                        "as a fraction of the initial one)", function, min_lr_factor);
    ct_lr_scheduler init = {.kind = WARMUP_COSINE, .period = total_steps, .a = (double)warmup_steps,
                            .b = min_lr_factor};
    return create(function, optimizer, &init, out);
}

ct_status ct_lr_scheduler_exponential(ct_optimizer *optimizer, double gamma, ct_lr_scheduler **out)
{
    const char *function = "ct_lr_scheduler_exponential";
    ct_status status = check_common(function, optimizer, out);
    if (status != CT_OK) return status;
    if (!(gamma > 0.0) || !isfinite(gamma))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: gamma is %g; it must be a positive number", function, gamma);
    return create(function, optimizer, &(ct_lr_scheduler){.kind = EXPONENTIAL, .b = gamma}, out);
}

/* A copy of count increasing counts >= first, or NULL with the error. */
static int64_t *copy_milestones(const char *function, const int64_t *milestones, int64_t count, int64_t first)
{
    if (count < 0 || (count > 0 && !milestones))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: %lld milestones at %p", function, (long long)count,
                             (const void *)milestones);
    for (int64_t i = 0; i < count; i++)
        if (milestones[i] < first || (i > 0 && milestones[i] <= milestones[i - 1]))
            return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: milestones[%lld] is %lld; the milestones must "
                                 "increase, from %lld", function, (long long)i, (long long)milestones[i],
                                 (long long)first);
    int64_t *copy = malloc((size_t)(count > 0 ? count : 1) * sizeof *copy);
    if (!copy) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    for (int64_t i = 0; i < count; i++) copy[i] = milestones[i];
    return copy;
}

ct_status ct_lr_scheduler_multi_step(ct_optimizer *optimizer, const int64_t *milestones, int64_t count,
                                     double gamma, ct_lr_scheduler **out)
{
    const char *function = "ct_lr_scheduler_multi_step";
    ct_status status = check_common(function, optimizer, out);
    if (status != CT_OK) return status;
    if (!(gamma > 0.0) || !isfinite(gamma))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: gamma is %g; it must be a positive number", function, gamma);
    int64_t *copy = copy_milestones(function, milestones, count, 1);
    if (!copy) return ct_last_error();
    ct_lr_scheduler init = {.kind = MULTI_STEP, .b = gamma, .milestones = copy, .milestone_count = count};
    return create(function, optimizer, &init, out);
}

ct_status ct_lr_scheduler_lambda(ct_optimizer *optimizer, ct_lr_lambda_fn lambda, void *context,
                                 ct_lr_scheduler **out)
{
    const char *function = "ct_lr_scheduler_lambda";
    ct_status status = check_common(function, optimizer, out);
    if (status != CT_OK) return status;
    if (!lambda) return null_argument(function, "lambda");
    ct_lr_scheduler init = {.kind = LAMBDA, .lambda = lambda, .lambda_context = context};
    return create(function, optimizer, &init, out);
}

/* Schedules a composite may take over: of optimizer, themselves not ReduceLROnPlateau; chainable
 * ones (factors of the rate) for ChainedScheduler. */
static ct_status check_children(const char *function, ct_lr_scheduler *const *children, int64_t count,
                                bool chained, ct_optimizer **optimizer)
{
    if (count < 1) return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: count is %lld; give at least one scheduler",
                                   function, (long long)count);
    if (!children) return null_argument(function, "schedulers");
    for (int64_t c = 0; c < count; c++) {
        const ct_lr_scheduler *child = children[c];
        if (!child) return ct_error(CT_ERR_NULL_ARGUMENT, "%s: schedulers[%lld] is NULL", function, (long long)c);
        if (child->optimizer != children[0]->optimizer)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: schedulers[%lld] steers another optimizer than "
                            "schedulers[0]; they must share one", function, (long long)c);
        for (int64_t d = 0; d < c; d++)
            if (children[d] == child)
                return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: schedulers[%lld] and [%lld] are the same",
                                function, (long long)d, (long long)c);
        bool chainable = child->kind == STEP_LR || child->kind == MULTI_STEP || child->kind == EXPONENTIAL ||
                         child->kind == LINEAR;
        if (child->kind == PLATEAU || (chained && !chainable))
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: schedulers[%lld] is a %s; %s", function, (long long)c,
                            kind_names[child->kind],
                            chained ? "ChainedScheduler multiplies the factors of StepLR, MultiStepLR, "
                                      "ExponentialLR and LinearLR"
                                    : "ReduceLROnPlateau cannot be part of a sequence");
    }
    *optimizer = children[0]->optimizer;
    return CT_OK;
}

/* A composite made: it takes the schedules over (freed with it) once made. */
static ct_status create_composite(const char *function, ct_lr_scheduler *init, ct_lr_scheduler *const *children,
                                  int64_t count, ct_optimizer *optimizer, ct_lr_scheduler **out)
{
    ct_lr_scheduler **owned = malloc((size_t)count * sizeof *owned);
    if (!owned) {
        free(init->milestones);
        return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    }
    for (int64_t c = 0; c < count; c++) owned[c] = children[c];
    /* the children's base rates are overwritten on success only: kept aside until then */
    double *saved = malloc((size_t)(count * optimizer->group_count) * sizeof *saved);
    if (!saved) {
        free(owned);
        free(init->milestones);
        return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    }
    for (int64_t c = 0; c < count; c++)
        for (int64_t g = 0; g < optimizer->group_count; g++) saved[c * optimizer->group_count + g] = children[c]->base_lrs[g];
    init->children = owned;
    init->child_count = count;
    ct_status status = create(function, optimizer, init, out);
    if (status != CT_OK) {
        for (int64_t c = 0; c < count; c++)
            for (int64_t g = 0; g < optimizer->group_count; g++) children[c]->base_lrs[g] = saved[c * optimizer->group_count + g];
        free(owned);
    }
    free(saved);
    return status;
}

ct_status ct_lr_scheduler_sequential(ct_lr_scheduler *const *schedulers, int64_t count, const int64_t *milestones,
                                     ct_lr_scheduler **out)
{
    const char *function = "ct_lr_scheduler_sequential";
    if (!out) return null_argument(function, "out");
    *out = NULL;
    ct_optimizer *optimizer = NULL;
    ct_status status = check_children(function, schedulers, count, false, &optimizer);
    if (status != CT_OK) return status;
    int64_t *copy = copy_milestones(function, milestones, count - 1, 1);
    if (!copy) return ct_last_error();
    ct_lr_scheduler init = {.kind = SEQUENTIAL, .milestones = copy, .milestone_count = count - 1};
    return create_composite(function, &init, schedulers, count, optimizer, out);
}

ct_status ct_lr_scheduler_chained(ct_lr_scheduler *const *schedulers, int64_t count, ct_lr_scheduler **out)
{
    const char *function = "ct_lr_scheduler_chained";
    if (!out) return null_argument(function, "out");
    *out = NULL;
    ct_optimizer *optimizer = NULL;
    ct_status status = check_children(function, schedulers, count, true, &optimizer);
    if (status != CT_OK) return status;
    ct_lr_scheduler init = {.kind = CHAINED};
    return create_composite(function, &init, schedulers, count, optimizer, out);
}

ct_plateau_options ct_plateau_options_default(void)
{
    return (ct_plateau_options){.maximize = false, .factor = 0.1, .patience = 10, .threshold = 1e-4,
                                .threshold_abs = false, .cooldown = 0, .min_lr = 0.0, .eps = 1e-8};
}

ct_status ct_lr_scheduler_reduce_on_plateau(ct_optimizer *optimizer, const ct_plateau_options *options,
                                            ct_lr_scheduler **out)
{
    const char *function = "ct_lr_scheduler_reduce_on_plateau";
    ct_status status = check_common(function, optimizer, out);
    if (status != CT_OK) return status;
    ct_plateau_options o = options ? *options : ct_plateau_options_default();
    if (!(o.factor >= 0.0 && o.factor < 1.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Factor should be < 1.0 (and >= 0), got %g", function, o.factor);
    if (o.patience < 0 || o.cooldown < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: patience %lld and cooldown %lld must not be negative",
                        function, (long long)o.patience, (long long)o.cooldown);
    if (!(o.threshold >= 0.0) || !isfinite(o.threshold) || !(o.min_lr >= 0.0) || !isfinite(o.min_lr) ||
        !(o.eps >= 0.0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: threshold %g, min_lr %g and eps %g must be finite numbers >= 0",
                        function, o.threshold, o.min_lr, o.eps);
    ct_lr_scheduler init = {.kind = PLATEAU, .plateau = o, .best = o.maximize ? -INFINITY : INFINITY};
    return create(function, optimizer, &init, out);
}

/* PyTorch's is_better: relative or absolute, below (min) or above (max) the best by threshold. */
static bool plateau_better(const ct_lr_scheduler *s, double metric)
{
    const ct_plateau_options *o = &s->plateau;
    if (!o->maximize)
        return o->threshold_abs ? metric < s->best - o->threshold : metric < s->best * (1.0 - o->threshold);
    return o->threshold_abs ? metric > s->best + o->threshold : metric > s->best * (1.0 + o->threshold);
}

ct_status ct_lr_scheduler_step_metric(ct_lr_scheduler *s, double metric)
{
    const char *function = "ct_lr_scheduler_step_metric";
    if (!s) return null_argument(function, "scheduler");
    if (s->kind != PLATEAU)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: a %s steps without a metric (ct_lr_scheduler_step)",
                        function, kind_names[s->kind]);
    if (s->last_epoch == INT64_MAX)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the count of steps is %lld, the largest an int64_t "
                        "holds; it cannot advance", function, (long long)s->last_epoch);
    s->last_epoch++;
    if (plateau_better(s, metric)) {
        s->best = metric;
        s->bad_epochs = 0;
    } else {
        s->bad_epochs++;
    }
    if (s->cooldown_left > 0) {
        s->cooldown_left--;
        s->bad_epochs = 0;
    }
    if (s->bad_epochs > s->plateau.patience) {
        for (int64_t g = 0; g < s->group_count; g++) {
            double old = ct_optimizer_group_lr(s->optimizer, g);
            double lowered = fmax(old * s->plateau.factor, s->plateau.min_lr);
            if (old - lowered > s->plateau.eps) {
                ct_status status = ct_optimizer_set_group_lr(s->optimizer, g, lowered);
                if (status != CT_OK) return status;
            }
        }
        s->cooldown_left = s->plateau.cooldown;
        s->bad_epochs = 0;
    }
    s->last_lr = ct_optimizer_group_lr(s->optimizer, 0);
    return CT_OK;
}

/* A count the schedule has a value for: OneCycleLR ends after total_steps steps. */
static ct_status check_count(const char *function, const ct_lr_scheduler *s, int64_t t)
{
    if (t < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: last_epoch is %lld; it must not be negative", function,
                        (long long)t);
    if (s->kind == ONE_CYCLE && t > s->period) /* PyTorch's bound: total_steps steps after the first lr */
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: Tried to step %lld times. The specified number of total "
                        "steps is %lld", function, (long long)t, (long long)s->period);
    return CT_OK;
}

ct_status ct_lr_scheduler_step(ct_lr_scheduler *s)
{
    const char *function = "ct_lr_scheduler_step";
    if (!s) return null_argument(function, "scheduler");
    if (s->kind == PLATEAU)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: ReduceLROnPlateau steps on a metric: call "
                        "ct_lr_scheduler_step_metric", function);
    if (s->last_epoch == INT64_MAX)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the count of steps is %lld, the largest an int64_t "
                        "holds; it cannot advance", function, (long long)s->last_epoch);
    ct_status status = check_count(function, s, s->last_epoch + 1);
    return status != CT_OK ? status : apply(function, s, s->last_epoch + 1);
}

ct_status ct_lr_scheduler_set_last_epoch(ct_lr_scheduler *s, int64_t last_epoch)
{
    const char *function = "ct_lr_scheduler_set_last_epoch";
    if (!s) return null_argument(function, "scheduler");
    if (s->kind == PLATEAU)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: ReduceLROnPlateau has no closed form of the count: its "
                        "rate follows the metrics it was given", function);
    ct_status status = check_count(function, s, last_epoch);
    return status != CT_OK ? status : apply(function, s, last_epoch);
}

/* The queries answer a neutral value for NULL, with the error recorded (as ct_numel does). */
double ct_lr_scheduler_get_last_lr(const ct_lr_scheduler *s)
{
    if (!s) return null_argument("ct_lr_scheduler_get_last_lr", "scheduler"), NAN;
    return s->last_lr;
}

int64_t ct_lr_scheduler_last_epoch(const ct_lr_scheduler *s)
{
    if (!s) return null_argument("ct_lr_scheduler_last_epoch", "scheduler"), -1;
    return s->last_epoch;
}

const char *ct_lr_scheduler_kind(const ct_lr_scheduler *s)
{
    if (!s) return null_argument("ct_lr_scheduler_kind", "scheduler"), NULL;
    return kind_names[s->kind];
}

void ct_lr_scheduler_free(ct_lr_scheduler *s)
{
    if (!s) return;
    for (int64_t c = 0; c < s->child_count; c++) ct_lr_scheduler_free(s->children[c]);
    free(s->children);
    free(s->milestones);
    ct_optimizer_free(s->optimizer); /* its reference */
    free(s->base_lrs);
    free(s);
}
