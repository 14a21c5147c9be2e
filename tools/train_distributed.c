/* DistributedDataParallel's part of `ctorch train`'s loop (`mpirun -np N ctorch train`): each rank
 * walks its share of every epoch through a DistributedSampler, and the epoch's sums are added up
 * over the ranks so that what is reported is the whole job's. The wrapping itself is in
 * ct_train_run (tools/train_loop.c), beside DataParallel's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "train.h"

ct_status ct_train_check_distributed(const ct_train_config *config)
{
    if (!ct_dist_is_initialized())
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "DistributedDataParallel needs the process group: "
                             "call ct_dist_init first");
    if (config->data_parallel_count > 0)
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "DistributedDataParallel and DataParallel together: "
                             "give one of them");
    return CT_OK;
}

ct_status ct_train_sampler_create(const ct_train_config *config, int64_t dataset_size,
                                  ct_distributed_sampler **out)
{
    /* PyTorch's defaults (shuffle, pad the last samples by repeating the first ones), from the
     * training seed: the order of epoch e is the permutation a single process's loader uses for
     * epoch e, dealt out to the ranks in turn, so N ranks at batch b step through the batches of
     * one process at batch N * b. */
    ct_distributed_sampler_options options = ct_distributed_sampler_options_default();
    options.seed = config->seed;
    *out = ct_distributed_sampler_create(dataset_size, ct_dist_world_size(), ct_dist_rank(), &options);
    return *out ? CT_OK : ct_train_fail_library("making the distributed sampler");
}

ct_status ct_train_sum_over_ranks(double *values, int count)
{
    ct_scope_push();
    ct_tensor *sums = ct_tensor_from_data(values, CT_F64, (int64_t[]){count}, 1, CT_DEVICE_CPU);
    ct_status status = CT_OK;
    if (!sums || ct_dist_all_reduce(sums, CT_REDUCE_SUM) != CT_OK ||
        ct_tensor_to_array(sums, values, (size_t)count * sizeof *values) != CT_OK)
        status = ct_train_fail_library("adding up the epoch over the ranks");
    ct_scope_pop();
    return status;
}

/* FNV-1a of the resumed state: the epoch, the schedule's count, and every byte of the optimizer's
 * state and of the generators' ("none" for a fresh run). */
static void resume_digest(const ct_train_state *resume, char *out, size_t size)
{
    if (!resume) {
        snprintf(out, size, "none");
        return;
    }
    uint64_t h = 14695981039346656037ULL;
    bool read = true;
    int64_t count = resume->optimizer ? ct_state_dict_count(resume->optimizer) : 0;
    for (int64_t i = -1; i < count && read; i++) {
        ct_tensor *t = i < 0 ? ct_retain(resume->rng) : ct_state_dict_tensor_at(resume->optimizer, i);
        const char *name = i < 0 ? "rng" : ct_state_dict_name_at(resume->optimizer, i);
        for (const char *c = name; c && *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ULL;
        size_t bytes = t ? (size_t)ct_numel(t) * ct_dtype_size(ct_tensor_dtype(t)) : 0;
        unsigned char *copy = malloc(bytes ? bytes : 1);
        read = t && copy && ct_tensor_to_array(t, copy, bytes) == CT_OK;
        for (size_t b = 0; read && b < bytes; b++) h = (h ^ copy[b]) * 1099511628211ULL;
        free(copy);
        ct_release(t);
    }
    if (read)
        snprintf(out, size, "epoch %d, schedule step %lld, state %016" PRIx64, resume->epoch,
                 (long long)resume->schedule_steps, h);
    else
        snprintf(out, size, "epoch %d, state unknown (out of memory)", resume->epoch);
}

ct_status ct_train_agree_on_settings(const ct_train_config *config, const ct_train_data *data)
{
    uint64_t digest;
    bool digested = ct_train_data_digest(data->train, &digest);
    enum { SETTINGS = 17, VALUE_MAX = 96 };
    char values[SETTINGS][VALUE_MAX];
    snprintf(values[0], VALUE_MAX, "%s", ct_train_model_name(config->model));
    snprintf(values[1], VALUE_MAX, "%d", config->epochs);
    snprintf(values[2], VALUE_MAX, "%lld", (long long)config->batch_size);
    snprintf(values[3], VALUE_MAX, "%llu", (unsigned long long)config->seed);
    snprintf(values[4], VALUE_MAX, "%s", ct_train_optimizer_name(config->optimizer));
    snprintf(values[5], VALUE_MAX, "%.17g", config->lr);
    snprintf(values[6], VALUE_MAX, "%lld", (long long)ct_dataset_size(data->train));
    snprintf(values[7], VALUE_MAX, "%lld", (long long)data->features);
    snprintf(values[8], VALUE_MAX, "%lld", (long long)data->classes);
    /* A rank that cannot read its data back still takes part (the others would wait for it). */
    if (digested) snprintf(values[9], VALUE_MAX, "%016" PRIx64, digest);
    else snprintf(values[9], VALUE_MAX, "unknown (out of memory)");
    snprintf(values[10], VALUE_MAX, "%s", ct_train_amp_name(config->amp));
    ct_train_schedule_format(&config->schedule, values[11], VALUE_MAX);
    ct_train_format_number(config->clip_grad, values[12], VALUE_MAX);
    snprintf(values[13], VALUE_MAX, "%s", config->drop_last ? "yes" : "no");
    ct_train_format_number(config->val_fraction, values[14], VALUE_MAX);
    snprintf(values[15], VALUE_MAX, "%s", config->graph ? "yes" : "no");
    resume_digest(config->resume, values[16], VALUE_MAX);
    /* The first three and the data's size fix how many collectives a rank calls; the seed fixes
     * the split and each rank's share (different seeds: overlapping shares); --drop-last the
     * number of steps; the others would make the replicas differ, and the resumed state (a stale
     * file on one rank) would train mismatched epochs. All before the first step. */
    const ct_dist_setting settings[SETTINGS] = {
        {"--model", values[0]},
        {"--epochs", values[1]},
        {"--batch-size", values[2]},
        {"--seed", values[3]},
        {"--optimizer", values[4]},
        {"--lr", values[5]},
        {"the number of training samples (--data)", values[6]},
        {"the number of features (--data)", values[7]},
        {"the number of classes (--data)", values[8]},
        {"the training split's checksum (--data, --seed)", values[9]},
        {"--amp", values[10]},
        {"--lr-schedule", values[11]},
        {"--clip-grad", values[12]},
        {"--drop-last", values[13]},
        {"--val-fraction", values[14]},
        {"--graph", values[15]},
        {"the resumed state (--resume)", values[16]},
    };
    if (ct_dist_agree_on_settings(settings, SETTINGS) == CT_OK) return CT_OK;
    return ct_train_fail(ct_last_error(), "%s", ct_last_error_message());
}
