/* The data layer's insides: the dataset record, the distributed sampler's record, the seeded
 * generator behind every shuffle, and subsets. */
#ifndef CT_DATA_INTERNAL_H
#define CT_DATA_INTERNAL_H

#include <stdatomic.h>

#include "ctorch/data.h"

/* A dataset is one of: tensors (each [N, ...], contiguous, on the CPU); callbacks; or a subset
 * of a callback dataset (`parent`'s samples indices[0..size)). Refcounted: loaders keep one. */
struct ct_dataset {
    atomic_int refcount;
    int num_tensors;
    ct_sample_spec samples[CT_DATASET_MAX_TENSORS];
    size_t sample_bytes[CT_DATASET_MAX_TENSORS];
    ct_tensor *tensors[CT_DATASET_MAX_TENSORS]; /* tensor datasets */
    ct_dataset_callbacks callbacks;             /* callback datasets (get_item set) */
    void *user;
    ct_dataset *parent; /* subsets of a callback dataset (a reference) */
    int64_t *indices;
    int64_t size, num_features, num_classes;
};

struct ct_distributed_sampler {
    int64_t dataset_size, num_samples, total_size, epoch;
    int num_replicas, rank;
    bool shuffle, drop_last;
    uint64_t seed;
};

/* The sampler's indices for its epoch into out[0..num_samples), with scratch memory for
 * dataset_size int64. */
void ct_distributed_sampler_fill(const ct_distributed_sampler *sampler, int64_t *out, int64_t *scratch);

struct ct_token_data {
    uint16_t *tokens;
    int64_t count, vocab_size;
    char *source; /* for messages: "'path'", "the validation part of 'path'" */
};

/* splitmix64: one 64-bit step of the generator whose state is *state. */
uint64_t ct_splitmix64_next(uint64_t *state);
/* Uniform in [0, bound) for bound >= 1, without modulo bias (see ct_data_permutation). */
uint64_t ct_splitmix64_below(uint64_t *state, uint64_t bound);

/* A dataset that takes over the references to features and labels (already checked). */
ct_dataset *ct_dataset_adopt(ct_tensor *features, ct_tensor *labels, int64_t num_classes);
/* Another reference to ds (ct_dataset_free drops one). */
ct_dataset *ct_dataset_retain(const ct_dataset *ds);
/* Writes sample `index` of ds into buffers[k] (sample_bytes[k] each): a copy from its tensors or
 * its get_item (whose failure is reported with the index, for `function`). */
ct_status ct_dataset_read_sample(const ct_dataset *ds, int64_t index, void *const *buffers, const char *function);
/* The samples indices[0..count) of ds, in that order, as a new dataset keeping ds's classes. */
ct_dataset *ct_dataset_subset(const ct_dataset *ds, const int64_t *indices, int64_t count);
/* The same for a callback dataset: a view that maps its indices to ds's (Subset). */
ct_dataset *ct_dataset_callback_subset(const ct_dataset *ds, const int64_t *indices, int64_t count);

#endif
