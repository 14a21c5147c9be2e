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

typedef enum schedule_kind { STEP_LR, COSINE_ANNEALING, LINEAR, ONE_CYCLE, WARMUP_COSINE } schedule_kind;

static const char *const kind_names[] = {"StepLR", "CosineAnnealingLR", "LinearLR", "OneCycleLR", "WarmupCosine"};

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

static double lr_at(const ct_lr_scheduler *s, double base_lr, int64_t t)
{
    switch (s->kind) {
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
        double lr = lr_at(s, s->base_lrs[g], t);
        if (!(lr >= 0.0) || isinf(lr))
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %s's learning rate at step %lld of group %lld is %g "
                            "(from an initial lr of %g); the schedule's arguments give no usable rate there",
                            function, kind_names[s->kind], (long long)t, (long long)g, lr, s->base_lrs[g]);
    }
    for (int64_t g = 0; g < s->group_count; g++) {
        ct_status status = ct_optimizer_set_group_lr(s->optimizer, g, lr_at(s, s->base_lrs[g], t));
        if (status != CT_OK) return status;
    }
    s->last_epoch = t;
    s->last_lr = lr_at(s, s->base_lrs[0], t);
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
        return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    }
    *s = *init;
    s->optimizer = optimizer;
    s->group_count = optimizer->group_count;
    s->base_lrs = base_lrs;
    for (int64_t g = 0; g < s->group_count; g++) base_lrs[g] = ct_optimizer_group_lr(optimizer, g);
    ct_status status = apply(function, s, 0);
    if (status != CT_OK) {
        free(base_lrs);
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
    ct_optimizer_free(s->optimizer); /* its reference */
    free(s->base_lrs);
    free(s);
}
