/* PyTorch's DistributedSampler (torch/utils/data/distributed.py): every rank walks an equally
 * long, disjoint share of the dataset, reshuffled each epoch from seed + epoch. The arithmetic is
 * PyTorch's to the element; only the permutation is ctorch's (ct_data_permutation). */
#include <stdlib.h>

#include "core/core_internal.h"
#include "data/data_internal.h"

#define FN_CREATE "ct_distributed_sampler_create"

ct_distributed_sampler_options ct_distributed_sampler_options_default(void)
{
    return (ct_distributed_sampler_options){.shuffle = true, .seed = 0, .drop_last = false};
}

ct_distributed_sampler *ct_distributed_sampler_create(int64_t dataset_size, int num_replicas, int rank,
                                                      const ct_distributed_sampler_options *options)
{
    ct_distributed_sampler_options defaults = ct_distributed_sampler_options_default();
    if (!options) options = &defaults;
    if (dataset_size < 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, FN_CREATE ": dataset_size is %lld; it must be >= 0",
                             (long long)dataset_size);
    if (num_replicas < 1)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, FN_CREATE ": num_replicas is %d; it must be >= 1 "
                             "(usually ct_dist_world_size())", num_replicas);
    if (rank < 0 || rank >= num_replicas)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, FN_CREATE ": rank is %d; it must be in [0, %d] for "
                             "%d replicas", rank, num_replicas - 1, num_replicas);
    ct_distributed_sampler *sampler = calloc(1, sizeof *sampler);
    if (!sampler) return ct_error_null(CT_ERR_OUT_OF_MEMORY, FN_CREATE ": no host memory for a sampler");
    sampler->dataset_size = dataset_size;
    sampler->num_replicas = num_replicas;
    sampler->rank = rank;
    sampler->shuffle = options->shuffle;
    sampler->seed = options->seed;
    sampler->drop_last = options->drop_last;
    /* PyTorch: ceil((N - R) / R) with drop_last when R does not divide N, which is floor(N / R)
     * (0 when N < R); ceil(N / R) otherwise. */
    sampler->num_samples = options->drop_last ? dataset_size / num_replicas
                                              : (dataset_size + num_replicas - 1) / num_replicas;
    sampler->total_size = sampler->num_samples * num_replicas;
    return sampler;
}

void ct_distributed_sampler_free(ct_distributed_sampler *sampler) { free(sampler); }

ct_status ct_distributed_sampler_set_epoch(ct_distributed_sampler *sampler, int64_t epoch)
{
    if (!sampler) return ct_null_argument("ct_distributed_sampler_set_epoch", "sampler"), ct_last_error();
    if (epoch < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_distributed_sampler_set_epoch: epoch is %lld; it must "
                        "be >= 0", (long long)epoch);
    sampler->epoch = epoch;
    return CT_OK;
}

int64_t ct_distributed_sampler_num_samples(const ct_distributed_sampler *sampler)
{
    if (!sampler) return ct_null_argument("ct_distributed_sampler_num_samples", "sampler"), -1;
    return sampler->num_samples;
}

int64_t ct_distributed_sampler_total_size(const ct_distributed_sampler *sampler)
{
    if (!sampler) return ct_null_argument("ct_distributed_sampler_total_size", "sampler"), -1;
    return sampler->total_size;
}

void ct_distributed_sampler_fill(const ct_distributed_sampler *s, int64_t *out, int64_t *scratch)
{
    int64_t n = s->dataset_size;
    if (s->shuffle) {
        ct_data_permutation(n, s->seed + (uint64_t)s->epoch, scratch);
    } else {
        for (int64_t i = 0; i < n; i++) scratch[i] = i;
    }
    /* Padding repeats the order from its start (PyTorch's indices += indices[:padding], over and
     * over when the padding is longer than the dataset), so position k of the padded list is
     * scratch[k % n]; drop_last only ever reads positions below n. */
    for (int64_t i = 0; i < s->num_samples; i++) {
        int64_t k = s->rank + i * s->num_replicas;
        out[i] = scratch[k % n];
    }
}

ct_status ct_distributed_sampler_indices(const ct_distributed_sampler *sampler, int64_t *out, int64_t capacity)
{
    static const char *FN = "ct_distributed_sampler_indices";
    if (!sampler) return ct_null_argument(FN, "sampler"), ct_last_error();
    if (sampler->num_samples > 0 && !out) return ct_null_argument(FN, "out"), ct_last_error();
    if (capacity < sampler->num_samples)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: out has room for %lld indices; this rank's share has %lld "
                        "(ct_distributed_sampler_num_samples)", FN, (long long)capacity,
                        (long long)sampler->num_samples);
    if (sampler->num_samples == 0) return CT_OK;
    int64_t *scratch = malloc(sizeof *scratch * (size_t)sampler->dataset_size);
    if (!scratch)
        return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for the order of %lld samples", FN,
                        (long long)sampler->dataset_size);
    ct_distributed_sampler_fill(sampler, out, scratch);
    free(scratch);
    return CT_OK;
}
