/* DistributedDataParallel's part of `ctorch train`'s loop (`mpirun -np N ctorch train`): each rank
 * walks its share of every epoch through a DistributedSampler, and the epoch's sums are added up
 * over the ranks so that what is reported is the whole job's. The wrapping itself is in
 * ct_train_run (tools/train_loop.c), beside DataParallel's. */
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
