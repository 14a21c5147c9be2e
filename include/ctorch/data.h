/* ctorch data: datasets (of tensors, of callbacks, of a CSV file), a seeded train/test split, and
 * a batch loader that hands out batches on the training device.
 *
 * A dataset is N samples of one or more tensors each, in host memory or made on demand by
 * callbacks; a CSV dataset is features (float32 [N, F]) and labels (int64 [N]). A loader walks
 * it in batches, in order or shuffled per epoch (like PyTorch's DataLoader with a seeded
 * RandomSampler / DistributedSampler.set_epoch). On an accelerator it gathers each batch into
 * pinned staging memory and starts the next batch's host-to-device copy before it returns the
 * current one, so that copy overlaps the current training step.
 *
 * Shuffles use splitmix64 (Steele, Lea & Flood 2014) and Fisher-Yates: the same seed gives the
 * same order on every machine. See ct_data_permutation for the exact procedure. */
#ifndef CTORCH_DATA_H
#define CTORCH_DATA_H

#include "ctorch/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_dataset ct_dataset;

/* ---- the shipped data set ----
 * The path of digits.csv.gz (UCI Optical Recognition of Handwritten Digits, 1797 8x8 images
 * with values 0..16, labels 0..9): $CTORCH_DATA (the file, or a folder holding it), else
 * <prefix>/share/ctorch next to the installed library (wherever the tree was moved), else the
 * source tree's data/ folder this library was built from. NULL (and CT_ERR_IO naming the places looked at) when none has it.
 * The string is valid until the next call in this thread. */
const char *ct_default_dataset_path(void);
/* The same for tinyshakespeare.txt, the shipped text the GPT trains on (1,115,394 bytes of
 * Shakespeare, public domain): in $CTORCH_DATA when that is a folder (or in the folder of the
 * digits file it names), else beside the installed library, else the source tree's data/. */
const char *ct_default_text_path(void);

/* ---- CSV files ----
 * One sample per line, numbers separated by commas, blank lines skipped. A path ending in .gz
 * is read through zlib (a plain file is read as is). Numbers are parsed in the C locale's
 * format ('.' as decimal point). */
typedef struct ct_csv_options {
    int label_column;     /* the label's column; negative counts from the end (-1: the last) */
    bool has_header;      /* skip the first non-blank line */
    double feature_scale; /* features are multiplied by this (1.0 / 16 for digits) */
} ct_csv_options;
/* The last column is the label, no header, scale 1. */
ct_csv_options ct_csv_options_default(void);

/* Reads a dataset; options NULL means the defaults. Errors name the file, line and column (from
 * 1): CT_ERR_IO for a file that cannot be opened or read (a truncated .gz too), CT_ERR_INDEX for
 * a label_column outside the rows, CT_ERR_INVALID_ARGUMENT for bad contents (rows of different
 * lengths, fields that are not finite numbers, bad labels, no data rows). Labels must be
 * non-negative integers (written as 3 or 3.0) below 2^31. */
ct_dataset *ct_csv_dataset_load(const char *path, const ct_csv_options *options);

/* A dataset over existing tensors: features float32 [N, F] and labels int64 [N] (>= 0), both on
 * the CPU. The dataset keeps its own references (contiguous copies when they are views). */
ct_dataset *ct_dataset_from_tensors(const ct_tensor *features, const ct_tensor *labels);

/* ---- datasets of any tensors (torch.utils.data.TensorDataset and Dataset) ----
 * A sample is up to CT_DATASET_MAX_TENSORS tensors (features, targets, masks, ...), each of any
 * dtype and shape; a loader stacks the k-th tensors of batch_size samples into a batch tensor
 * [B, <sample shape>] (PyTorch's default collate). */
#define CT_DATASET_MAX_TENSORS 8

/* The dtype and shape of one tensor of a sample: ndim 0 is a scalar (batched as [B]). */
typedef struct ct_sample_spec {
    ct_dtype dtype;
    int ndim;
    int64_t shape[CT_MAX_DIMS - 1];
} ct_sample_spec;

/* TensorDataset(*tensors): count (1..CT_DATASET_MAX_TENSORS) CPU tensors sharing their first
 * dimension N; sample i is (tensors[0][i], tensors[1][i], ...). Any dtype and shape: images
 * float32 [N, C, H, W] with float regression targets [N, 1], int64 token sequences [N, T] with
 * [N, T] targets, ... The dataset keeps its own references (contiguous copies of views); the
 * caller keeps its own. ct_dataset_num_classes is the largest label + 1 when tensors[1] is int64
 * [N] with no negative value, else 0. */
ct_dataset *ct_tensor_dataset(ct_tensor *const *tensors, int count);

/* A dataset defined by code (a torch.utils.data.Dataset subclass): len() gives N, called once
 * when the dataset is made; get_item(user, i, buffers) writes sample i (0 <= i < N), tensor k
 * into buffers[k], which has room for one sample of samples[k] (contiguous, row-major), and
 * returns CT_OK (any other status stops the loader, which reports it with the index). */
typedef struct ct_dataset_callbacks {
    int64_t (*len)(void *user);
    ct_status (*get_item)(void *user, int64_t index, void *const *buffers);
    void (*free_user)(void *user); /* may be NULL: frees user with the dataset */
} ct_dataset_callbacks;
/* count (1..CT_DATASET_MAX_TENSORS) tensors per sample, described by samples[0..count). The
 * dataset takes over user: free_user(user) runs when the dataset is freed, and also when this
 * call fails. get_item is called on the thread that calls ct_data_loader_next. */
ct_dataset *ct_dataset_from_callbacks(const ct_dataset_callbacks *callbacks, void *user,
                                      const ct_sample_spec *samples, int count);

/* The number of tensors per sample, and the dtype and shape of tensor k of a sample; -1 / an
 * error for NULL or k out of range. */
int ct_dataset_num_tensors(const ct_dataset *ds);
ct_status ct_dataset_sample_spec(const ct_dataset *ds, int k, ct_sample_spec *spec);
/* Sample `index`: out[k] (k < count, count = ct_dataset_num_tensors) receives a new CPU tensor of
 * tensor k's sample shape (recorded in the current scope like any returned tensor). */
ct_status ct_dataset_get(const ct_dataset *ds, int64_t index, ct_tensor **out, int count);

/* Frees the caller's dataset; loaders made from it keep what they need (a dataset is
 * refcounted inside). NULL-safe. */
void ct_dataset_free(ct_dataset *ds);
int64_t ct_dataset_size(const ct_dataset *ds);         /* N; -1 for NULL */
/* F: the elements of one sample of the first tensor; -1 for NULL. */
int64_t ct_dataset_num_features(const ct_dataset *ds);
/* Largest label + 1 (0 when empty). The parts of a split keep the whole dataset's count, so a
 * test part that lacks some class still reports every class. */
int64_t ct_dataset_num_classes(const ct_dataset *ds);
/* The dataset's first and second CPU tensors (new references), features float32 [N, F] and
 * labels int64 [N] for a CSV dataset; NULL with an error for a dataset defined by callbacks or
 * without a second tensor. ct_dataset_tensor gives tensor k. */
ct_tensor *ct_dataset_tensor(const ct_dataset *ds, int k);
ct_tensor *ct_dataset_features(const ct_dataset *ds);
ct_tensor *ct_dataset_labels(const ct_dataset *ds);

/* Shuffles the samples with ct_data_permutation(N, seed), then puts the first
 * ceil(test_fraction * N) of them into *test and the rest into *train (as scikit-learn's
 * train_test_split does, except that the product's rounding error is not rounded up: 0.1 of 30
 * is 3). 0 < test_fraction < 1, and both parts must have a sample. The parts of a tensor dataset
 * are copies; the parts of a callback dataset are views of it (torch.utils.data.Subset) that call
 * its get_item with the original indices. */
ct_status ct_dataset_split(const ct_dataset *ds, double test_fraction, uint64_t seed,
                           ct_dataset **train, ct_dataset **test);

/* A permutation of 0..n-1 into out: Fisher-Yates from the last element down, index j for
 * position i drawn uniformly from [0, i] by rejection (draws below 2^64 mod (i+1) are redrawn,
 * then j = draw mod (i+1)), draws from splitmix64 started at state = seed. */
ct_status ct_data_permutation(int64_t n, uint64_t seed, int64_t *out);

/* ---- the distributed sampler ----
 * PyTorch's DistributedSampler: each of num_replicas processes (ranks) walks its own share of a
 * dataset of N samples, all shares equally long. Per epoch, with the same algorithm as PyTorch's:
 *   num_samples = drop_last ? floor(N / num_replicas) : ceil(N / num_replicas)  (per rank)
 *   total_size  = num_samples * num_replicas
 *   indices     = shuffle ? ct_data_permutation(N, seed + epoch) : 0, 1, ..., N-1
 *   without drop_last, indices is padded to total_size by repeating it from its start; with
 *   drop_last it is cut to total_size
 *   rank r gets indices[r], indices[r + num_replicas], indices[r + 2 * num_replicas], ...
 * So across the ranks each sample appears exactly once per epoch, apart from the padding
 * (which repeats the first total_size - N samples) or the samples drop_last leaves out. The
 * shuffle is ctorch's (ct_data_permutation), not torch.randperm: the same seed gives the same
 * order on every rank and machine, but not PyTorch's order. */
typedef struct ct_distributed_sampler ct_distributed_sampler;

typedef struct ct_distributed_sampler_options {
    bool shuffle;   /* a new order each epoch, from seed + epoch */
    uint64_t seed;  /* the same on every rank */
    bool drop_last; /* leave out the tail that does not divide evenly instead of padding */
} ct_distributed_sampler_options;
/* shuffle, seed 0, pad (PyTorch's defaults). */
ct_distributed_sampler_options ct_distributed_sampler_options_default(void);

/* A sampler over dataset_size (>= 0) samples for rank `rank` of num_replicas (>= 1); usually
 * num_replicas = ct_dist_world_size() and rank = ct_dist_rank(). options NULL means the defaults. */
ct_distributed_sampler *ct_distributed_sampler_create(int64_t dataset_size, int num_replicas, int rank,
                                                      const ct_distributed_sampler_options *options);
void ct_distributed_sampler_free(ct_distributed_sampler *sampler); /* NULL-safe */
/* The epoch (>= 0) whose order ct_distributed_sampler_indices gives; 0 until set. Every rank
 * must set the same epoch, or their shares overlap. */
ct_status ct_distributed_sampler_set_epoch(ct_distributed_sampler *sampler, int64_t epoch);
/* Samples per rank and epoch (len(sampler)), and all ranks' together; -1 for NULL. */
int64_t ct_distributed_sampler_num_samples(const ct_distributed_sampler *sampler);
int64_t ct_distributed_sampler_total_size(const ct_distributed_sampler *sampler);
/* This rank's sample indices for the current epoch, in order, into out[0..num_samples);
 * capacity is out's length. */
ct_status ct_distributed_sampler_indices(const ct_distributed_sampler *sampler, int64_t *out,
                                         int64_t capacity);

/* ---- the loader ---- */
typedef struct ct_data_loader ct_data_loader;

typedef struct ct_data_loader_options {
    int64_t batch_size; /* >= 1 */
    bool shuffle;       /* a new order each epoch, from seed + epoch */
    uint64_t seed;
    bool drop_last;     /* leave out a last batch smaller than batch_size */
    ct_device device;   /* where batches are handed out */
    /* When set, the loader walks this sampler's share of the dataset (DataLoader(sampler=...)):
     * the loader copies the sampler's settings at creation, and ct_data_loader_start_epoch(e)
     * does set_epoch(e) on its copy. The order is then the sampler's: shuffle must be false
     * (seed is unused), and the sampler's dataset size must be the dataset's. NULL: the whole
     * dataset. */
    const ct_distributed_sampler *sampler;
} ct_data_loader_options;
/* batch_size 1, in order, seed 0, keep the last batch, on the CPU, no sampler (PyTorch's
 * defaults). */
ct_data_loader_options ct_data_loader_options_default(void);

/* The loader keeps its own reference to the dataset (the caller may free its own).
 * options NULL means the defaults. */
ct_data_loader *ct_data_loader_create(const ct_dataset *ds, const ct_data_loader_options *options);
/* Waits for copies in flight, then frees everything. NULL-safe. */
void ct_data_loader_free(ct_data_loader *loader);
void ct_data_loader_destroy(ct_data_loader *loader); /* the same as ct_data_loader_free (an older name) */
/* Batches per epoch: ceil(N / batch_size), or floor with drop_last, where N is the dataset's size
 * or, with a sampler, its num_samples. -1 for NULL. */
int64_t ct_data_loader_num_batches(const ct_data_loader *loader);

/* Starts epoch `epoch` (>= 0) from its first batch; with shuffle the order is
 * ct_data_permutation(N, seed + epoch), with a sampler the sampler's indices for that epoch. The
 * first ct_data_loader_next without it starts epoch 0. */
ct_status ct_data_loader_start_epoch(ct_data_loader *loader, int64_t epoch);

/* The next batch of the epoch, for a dataset of any tensors: CT_OK with out[k] (k < count, count
 * = ct_dataset_num_tensors) the k-th tensors of the batch's samples stacked ([B, <sample shape>],
 * the sample's dtype) on the loader's device, new references recorded in the current scope. At the
 * end of the epoch: CT_END_OF_DATA with every out[k] NULL; otherwise as ct_data_loader_next. */
ct_status ct_data_loader_next_batch(ct_data_loader *loader, ct_tensor **out, int count);

/* The shortcut for datasets of two tensors (x and y; CT_ERR_INVALID_ARGUMENT for others): the
 * next batch of the epoch: CT_OK with *x (float32 [B, F] for a CSV dataset) and *y (int64 [B]) on the loader's
 * device, new references (recorded in the current scope like any returned tensor). At the end of
 * the epoch: CT_END_OF_DATA with *x and *y NULL (not an error; nothing is recorded), until the
 * next ct_data_loader_start_epoch. On an accelerator, the batch is ready for work queued on the
 * current stream, and the next batch's copy is already under way. */
ct_status ct_data_loader_next(ct_data_loader *loader, ct_tensor **x, ct_tensor **y);

/* ---- token data for language models ----
 * A sequence of token ids in host memory, from one of two kinds of file:
 *   llm.c's token files (written by llm.c's and nanoGPT's preparation scripts): a header of 256
 *     little-endian int32 (magic 20240520, version 1, the token count, the rest unused), then
 *     the tokens as little-endian uint16;
 *   plain text, read as bytes: every byte is a token, the vocabulary is 256.
 * Ids are checked against the vocabulary when the file is read. */
typedef struct ct_token_data ct_token_data;

#define CT_TOKEN_FILE_MAGIC 20240520
#define CT_TOKEN_FILE_VERSION 1
#define CT_TOKEN_FILE_HEADER_BYTES 1024

/* Reads an llm.c token file. vocab_size (1..65536) bounds the ids; 0 means 65536 (any uint16).
 * Errors name the file and say what would be right: CT_ERR_IO for a file that cannot be read, a
 * bad magic or version, a file shorter than its header, or a size that does not match the header's
 * count; CT_ERR_INVALID_ARGUMENT for an id >= vocab_size (with its position). */
ct_token_data *ct_token_data_load_llmc(const char *path, int64_t vocab_size);
/* Reads a file's bytes as tokens 0..255 (vocabulary 256). An empty file is an error. */
ct_token_data *ct_token_data_load_text(const char *path);
/* Either of the above: a file whose name ends in ".bin" or which begins with the magic is an llm.c
 * token file (vocab_size as there), any other is text (vocab_size must then be 0 or >= 256). */
ct_token_data *ct_token_data_load(const char *path, int64_t vocab_size);
/* count tokens (>= 1) from memory, each in [0, vocab_size), vocab_size in 1..65536. */
ct_token_data *ct_token_data_from_tokens(const int64_t *tokens, int64_t count, int64_t vocab_size);
void ct_token_data_free(ct_token_data *data); /* NULL-safe */

/* Writes the tokens as an llm.c token file, atomically (as ct_save: a failure leaves what was at
 * path as it was). So text becomes a token file llm.c's train_gpt2.c reads. */
ct_status ct_token_data_save(const ct_token_data *data, const char *path);

int64_t ct_token_data_size(const ct_token_data *data);       /* tokens; -1 for NULL */
int64_t ct_token_data_vocab_size(const ct_token_data *data); /* 256 for text; -1 for NULL */
/* tokens [start, start + count) into out. */
ct_status ct_token_data_read(const ct_token_data *data, int64_t start, int64_t count, int64_t *out);

/* A validation split as nanoGPT's: *train the first floor(N * (1 - val_fraction)) tokens, *val
 * the rest (the file's last fraction). 0 <= val_fraction < 1; with 0 *val is NULL; otherwise both
 * parts must hold a token. New objects; data stays as it was. */
ct_status ct_token_data_split(const ct_token_data *data, double val_fraction, ct_token_data **train,
                              ct_token_data **val);

/* ---- batches of token windows ----
 * Each batch is inputs and targets, int64 [B, T]: row b is a window of T + 1 consecutive tokens
 * w[0..T], inputs[b] = w[0..T-1], targets[b] = w[1..T] (the next token of each position).
 *   CT_TOKEN_ORDER_RANDOM (nanoGPT's get_batch): every window starts at an offset drawn uniformly
 *     from [0, N - T - 1]. Window g (g = batch * world_size * B + rank * B + b) takes h, the g-th
 *     output (from 0) of splitmix64 started at seed, as the state of a generator of its own, and
 *     draws its offset from it as ct_data_permutation draws (by rejection, then modulo N - T).
 *     So every window is known from the seed alone, and resuming at a batch draws what the run
 *     would have drawn.
 *   CT_TOKEN_ORDER_SEQUENTIAL (llm.c's DataLoader without shuffling): batch i holds tokens
 *     [s, s + B*T + 1) with s = (i * world_size + rank) * B * T, row b the T + 1 tokens from
 *     s + b*T; after floor((N - 1) / (world_size * B * T)) batches it wraps to the start.
 * Under DDP (world_size > 1) rank r takes its own windows: in both orders the ranks' batches of a
 * step together are the batch that one process with world_size * B rows would take. */
typedef enum ct_token_order { CT_TOKEN_ORDER_RANDOM = 0, CT_TOKEN_ORDER_SEQUENTIAL = 1 } ct_token_order;

typedef struct ct_token_loader_options {
    int64_t batch_size;   /* B >= 1 */
    int64_t seq_len;      /* T >= 1; the data must hold T + 1 tokens (world_size * B * T + 1 in order) */
    ct_token_order order;
    uint64_t seed;        /* the random order's; the same on every rank */
    int rank, world_size; /* 0 <= rank < world_size; usually ct_dist_rank(), ct_dist_world_size() */
    ct_device device;     /* where batches are handed out */
} ct_token_loader_options;
/* B 8, T 256, random order, seed 0, rank 0 of 1, on the CPU. */
ct_token_loader_options ct_token_loader_options_default(void);

typedef struct ct_token_loader ct_token_loader;
/* The loader keeps its own copy of what it needs of data (data may be freed). options NULL means
 * the defaults. CT_ERR_INVALID_ARGUMENT when the data is shorter than a window (naming the file). */
ct_token_loader *ct_token_loader_create(const ct_token_data *data, const ct_token_loader_options *options);
void ct_token_loader_free(ct_token_loader *loader); /* NULL-safe */
/* The next batch: *inputs and *targets int64 [B, T] on the loader's device, new references. */
ct_status ct_token_loader_next(ct_token_loader *loader, ct_tensor **inputs, ct_tensor **targets);
/* The batch that ct_token_loader_next hands out next (0 after creation); setting it resumes a run
 * there (position >= 0). ct_token_loader_set_position(loader, 0) starts again from the first
 * batch, as llm.c's dataloader_reset (for the same validation batches at every evaluation). */
int64_t ct_token_loader_position(const ct_token_loader *loader); /* -1 for NULL */
ct_status ct_token_loader_set_position(ct_token_loader *loader, int64_t position);
/* Batches in one pass over the data: floor((N - 1) / (world_size * B * T)); the sequential order
 * wraps after them. -1 for NULL. */
int64_t ct_token_loader_num_batches(const ct_token_loader *loader);

#ifdef __cplusplus
}
#endif
#endif
