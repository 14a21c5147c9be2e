/* The data layer's insides: the dataset record, the distributed sampler's record, the seeded
 * generator behind every shuffle, and subsets. */
#ifndef CT_DATA_INTERNAL_H
#define CT_DATA_INTERNAL_H

#include "ctorch/data.h"

struct ct_dataset {
    ct_tensor *features; /* float32 [N, F], contiguous, on the CPU */
    ct_tensor *labels;   /* int64 [N], contiguous, on the CPU */
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
/* The samples indices[0..count) of ds, in that order, as a new dataset keeping ds's classes. */
ct_dataset *ct_dataset_subset(const ct_dataset *ds, const int64_t *indices, int64_t count);

#endif
