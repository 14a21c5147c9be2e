/* Training on a CSV data set (the shipped digits by default): the models of `ctorch train`, the
 * data split, the epoch loop, evaluation and checkpoints. `ctorch train` and `ctorch eval` print;
 * this code computes (the tests call it directly). A function that fails returns its status and
 * leaves a one-line message in ct_train_error_message(). */
#ifndef CT_TRAIN_H
#define CT_TRAIN_H

#include "ctorch.h"

/* ---- errors ---- */
/* The message of this thread's last failure in the training code ("" when none). */
const char *ct_train_error_message(void);
/* Records a failure of the training code itself and returns status. */
ct_status ct_train_fail(ct_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records the library's last failure (ct_last_error, ct_last_error_message) after "what: ";
 * returns its status (CT_ERR_INTERNAL when the library recorded none). */
ct_status ct_train_fail_library(const char *what);

/* ---- models ---- */
typedef enum ct_train_model { CT_TRAIN_MLP = 0, CT_TRAIN_CNN, CT_TRAIN_MODEL_COUNT } ct_train_model;
typedef enum ct_train_optimizer { CT_TRAIN_SGD = 0, CT_TRAIN_ADAM, CT_TRAIN_ADAMW, CT_TRAIN_OPTIMIZER_COUNT } ct_train_optimizer;

/* `--amp`: "none" (CT_F32), "bf16" (CT_BF16), "fp16" (CT_F16), and back; false for other text. */
const char *ct_train_amp_name(ct_dtype amp);
bool ct_train_amp_parse(const char *text, ct_dtype *out);

/* "mlp", "cnn" / "sgd", "adam", "adamw". */
const char *ct_train_model_name(ct_train_model model);
const char *ct_train_optimizer_name(ct_train_optimizer optimizer);
/* Names to values; false (nothing recorded) for a name that is not one of them. */
bool ct_train_model_parse(const char *text, ct_train_model *out);
bool ct_train_optimizer_parse(const char *text, ct_train_optimizer *out);

/* A new model on the cpu for samples of `features` values and `classes` classes, initialised from
 * ctorch's global seed (ct_manual_seed first for a reproducible model). The cnn reads each sample
 * as a square one-channel image, so features must be a square (64: 8 x 8 for digits). */
ct_module *ct_train_model_create(ct_train_model model, int64_t features, int64_t classes);
/* The names and shapes of that model's state dict, without building it (to check a file against
 * them before allocating): the count, at most CT_TRAIN_MODEL_TENSORS_MAX, or -1 (recorded) for
 * sizes ct_train_model_create refuses. */
#define CT_TRAIN_MODEL_TENSORS_MAX 8
typedef struct ct_train_tensor_shape {
    const char *name;
    int ndim;
    int64_t shape[4];
} ct_train_tensor_shape;
int ct_train_model_shapes(ct_train_model model, int64_t features, int64_t classes, ct_train_tensor_shape *out);

/* ---- data ---- */
#define CT_TRAIN_TEST_FRACTION 0.2
/* The most features and classes `ctorch train` reads from data and `ctorch eval` from a
 * checkpoint's __metadata__: one bound for both, so that what train saves eval reads. */
#define CT_TRAIN_MAX_FEATURES (1 << 20)
#define CT_TRAIN_MAX_CLASSES (1 << 20)

typedef struct ct_train_data {
    ct_dataset *train, *test;
    ct_dataset *val; /* held out of the training set by ct_train_data_hold_out; NULL when none */
    int64_t features, classes;
    double feature_scale; /* every feature was multiplied by it (`--scale`) */
} ct_train_data;

/* The digits' pixels are 0..16: 1/16 puts them in [0, 1]. Every checkpoint saved before `--scale`
 * was trained on features times this, whatever its CSV. */
#define CT_TRAIN_DIGITS_SCALE (1.0 / 16)
/* `--scale`'s default for path (NULL: the shipped digits): CT_TRAIN_DIGITS_SCALE for the shipped
 * digits (NULL, or another name of that file), 1 for any other CSV, read as it is, as a PyTorch
 * DataLoader over one's own tensors would. */
double ct_train_data_default_scale(const char *path);
/* Reads path (NULL: the shipped digits, ct_default_dataset_path) with features times scale (0:
 * ct_train_data_default_scale's) and splits it with the seed: CT_TRAIN_TEST_FRACTION of it for
 * testing. */
ct_status ct_train_data_load_scaled(const char *path, double scale, uint64_t split_seed, ct_train_data *out);
/* ct_train_data_load_scaled with the default scale. */
ct_status ct_train_data_load(const char *path, uint64_t split_seed, ct_train_data *out);
void ct_train_data_free(ct_train_data *data); /* NULL-safe; leaves the struct empty */
/* FNV-1a over a dataset's features and labels (what ranks and --resume compare: another file, or
 * the same number of other rows, trains another model); false when there is no memory to read
 * them back. */
bool ct_train_data_digest(const ct_dataset *ds, uint64_t *out);
/* `--val-fraction`: moves ceil(fraction * N) of the N training samples into data->val, chosen
 * with ct_data_permutation from the seed (the same samples every run of that seed). 0 holds out
 * nothing; otherwise 0 < fraction < 1 and both parts must keep a sample (CT_ERR_INVALID_ARGUMENT
 * naming the sizes). */
ct_status ct_train_data_hold_out(ct_train_data *data, double fraction, uint64_t seed);

/* ---- learning-rate schedules (`--lr-schedule`) ----
 * step:STEP[:GAMMA]     StepLR: the rate times GAMMA (0.1) every STEP epochs
 * cosine[:ETA_MIN]      CosineAnnealingLR over the run's epochs, down to ETA_MIN (0)
 * onecycle[:MAX_LR]     OneCycleLR over every step (batch) of the run, peaking at MAX_LR (--lr)
 * warmup:N[:START]      LinearLR: from START (1/3) times the rate up to the rate over N epochs
 * Every schedule but onecycle steps once per epoch. */
typedef enum ct_train_schedule_kind {
    CT_TRAIN_SCHEDULE_NONE = 0, CT_TRAIN_SCHEDULE_STEP, CT_TRAIN_SCHEDULE_COSINE, CT_TRAIN_SCHEDULE_ONECYCLE,
    CT_TRAIN_SCHEDULE_WARMUP
} ct_train_schedule_kind;
typedef struct ct_train_schedule {
    ct_train_schedule_kind kind;
    int64_t epochs; /* step: STEP; warmup: N */
    double value;   /* step: GAMMA; cosine: ETA_MIN; onecycle: MAX_LR (0: the lr); warmup: START */
} ct_train_schedule;
/* Parses text; false with the reason in ct_train_error_message(). */
bool ct_train_schedule_parse(const char *text, ct_train_schedule *out);
/* value in the fewest digits (6 to 17) that read back as the same double. */
void ct_train_format_number(double value, char *out, size_t size);
/* The schedule in the syntax above, every number given in the fewest digits that read back the
 * same ("none" for none): what a checkpoint keeps. */
void ct_train_schedule_format(const ct_train_schedule *schedule, char *out, size_t size);
struct ct_train_config;
/* The library's scheduler of config->schedule over optimizer (*out NULL for none): cosine's t_max
 * is config->epochs, onecycle's total steps config->epochs * steps_per_epoch. */
ct_status ct_train_schedule_create(const struct ct_train_config *config, ct_optimizer *optimizer,
                                   int64_t steps_per_epoch, ct_lr_scheduler **out);
/* Whether the scheduler steps after every batch (onecycle) rather than every epoch. */
bool ct_train_schedule_steps_per_batch(const ct_train_schedule *schedule);

/* ---- `ctorch train --graph` (train_graph.c) ----
 * The step (the loop's update, then the loss and correct count summed on the device) on static
 * batch tensors: the first full batch warms up eagerly on a side stream, the second is captured
 * there and replayed, every later one replayed. */
typedef struct ct_train_graph ct_train_graph;
/* The update of a training step on (x, y): zero_grad, the forward pass and the loss (under the
 * run's autocast), backward, clipping, the optimizer's step. *logits and *loss are the caller
 * scope's. train_loop.c's, which the eager steps run too. */
typedef ct_status (*ct_train_update_fn)(void *context, const ct_tensor *x, const ct_tensor *y, ct_tensor **logits,
                                        ct_tensor **loss);
/* CT_OK when config can train with --graph; otherwise the reason, recorded. */
ct_status ct_train_graph_check(const struct ct_train_config *config);
ct_status ct_train_graph_create(ct_train_update_fn update, void *context, const struct ct_train_config *config,
                                int64_t features, ct_train_graph **out);
void ct_train_graph_free(ct_train_graph *g); /* NULL-safe */
/* One step on a full batch (x, y); *loss is its mean loss (the graph's output, valid until the
 * next step). */
ct_status ct_train_graph_step(ct_train_graph *g, const ct_tensor *x, const ct_tensor *y, const ct_tensor **loss);
/* The optimizer's learning rate changed (a per-epoch schedule): a replay would keep the old one, so
 * the next full batch captures the step again. */
ct_status ct_train_graph_recapture(ct_train_graph *g);
/* Its static batch of inputs (the batch size a step takes). */
const ct_tensor *ct_train_graph_batch(const ct_train_graph *g);
/* The sums of the steps since the last call, plus the eager steps' sums (the ragged last batch's;
 * NULL: none) added in float32 as the eager loop adds them, into *loss and *correct (a host sync);
 * zeroes them. */
ct_status ct_train_graph_take_sums(ct_train_graph *g, const ct_tensor *eager_loss, const ct_tensor *eager_correct,
                                   double *loss, int64_t *correct);

/* ---- the loop ---- */
#define CT_TRAIN_MAX_DEVICES 64 /* DataParallel's limit */

typedef struct ct_train_config {
    ct_train_model model;
    ct_train_optimizer optimizer;
    int epochs;
    int64_t batch_size;
    double lr;
    uint64_t seed;    /* the split, the model's initialisation, the shuffles, dropout */
    ct_device device; /* where the model and the batches are */
    /* DataParallel (ctorch/parallel.h) when data_parallel_count > 0: the model trains and tests
     * wrapped, each batch split over data_parallel[0..count), devices of one type each listed once,
     * with device equal to data_parallel[0]. The model itself stays plain (its state dict has no
     * "module." prefix). */
    int data_parallel_count;
    ct_device data_parallel[CT_TRAIN_MAX_DEVICES];
    /* DistributedDataParallel (ctorch/distributed.h) when distributed: every rank of the
     * initialised process group runs ct_train_run with the same settings (device aside); the model
     * trains wrapped, on this rank's DistributedSampler share of each epoch (seeded with seed), so
     * batch_size is per rank. The epochs' loss, accuracy, samples and samples per second are the
     * whole job's; every rank tests the plain model on the whole test set (no collective). Not
     * with DataParallel. */
    bool distributed;
    /* Go on when an epoch's mean loss is not finite; otherwise ct_train_run stops there with
     * CT_ERR_INVALID_ARGUMENT naming the epoch (`ctorch train --allow-nonfinite`). */
    bool allow_nonfinite;
    ct_train_schedule schedule; /* kind NONE: the learning rate stays */
    double clip_grad;           /* > 0: ct_clip_grad_norm_ of the gradients to this (2-norm) each step */
    double val_fraction;        /* what ct_train_data_hold_out was given (kept in checkpoints) */
    /* Mixed precision (`--amp`): CT_F32 (0) trains in float32; CT_BF16 or CT_F16 runs each step's
     * forward pass and loss under autocast in that dtype (the parameters stay float32), float16
     * with a gradient scaler. Not with DataParallel (its replicas run in threads of their own). */
    ct_dtype amp;
    /* `--graph`: every full batch's step replays a graph captured once (train_graph.c), the last
     * ragged batch runs as usual; `--drop-last` leaves that batch out. */
    bool graph, drop_last;
    /* Resuming: the state a checkpoint kept (NULL: a fresh run). The loop runs epochs
     * resume->epoch + 1 to epochs, from the optimizer's, the schedule's and the generators' state. */
    const struct ct_train_state *resume;
} ct_train_config;

/* The defaults of `ctorch train --model <model>` on the cpu (Adam). */
ct_train_config ct_train_config_default(ct_train_model model);
/* The default learning rate of a model with an optimizer (SGD, with momentum 0.9, needs a larger
 * one than Adam). */
double ct_train_default_lr(ct_train_model model, ct_train_optimizer optimizer);

typedef struct ct_train_epoch {
    int epoch, epochs;      /* from 1 */
    double loss;            /* the mean training loss over the epoch's batches */
    double accuracy;        /* the fraction of the epoch's training samples classified right */
    double val_accuracy;    /* on data->val after the epoch; NaN without one */
    double lr;              /* the learning rate at the epoch's start */
    int64_t samples;
    double seconds;
    double samples_per_second;
} ct_train_epoch;

struct ct_train_state;
/* What the loop tells its caller as it goes; every callback may be NULL. on_step receives each
 * step's loss tensor (borrowed; reading it waits for the device). on_state receives, after each
 * epoch's on_epoch, the plain model (on the training device) and the state a resumed run would
 * continue from (both borrowed): `--save` writes them there, so that a run stopped later resumes
 * from its last finished epoch. A status other than CT_OK from it ends the run with that status
 * (its message in ct_train_error_message()). */
typedef struct ct_train_observer {
    void (*on_step)(void *context, int epoch, int64_t step, int64_t steps, const ct_tensor *loss);
    void (*on_epoch)(void *context, const ct_train_epoch *epoch);
    ct_status (*on_state)(void *context, const ct_module *model, const struct ct_train_state *state);
    void *context;
} ct_train_observer;

/* What a run leaves to continue from (`--save`, `--resume`). */
typedef struct ct_train_state {
    int epoch;                /* epochs finished */
    int64_t schedule_steps;   /* the scheduler's count (ct_lr_scheduler_last_epoch) */
    ct_state_dict *optimizer; /* ct_optimizer_state_dict's */
    ct_tensor *rng;           /* ct_get_rng_state's */
    double amp_scale;         /* --amp fp16: the gradient scaler's scale and growth tracker */
    int64_t amp_growth_tracker;
} ct_train_state;
void ct_train_state_free(ct_train_state *state); /* NULL-safe; leaves it empty */

typedef struct ct_train_result {
    double final_loss;       /* the last epoch's mean loss */
    double train_seconds;    /* the epochs, evaluation excluded */
    double samples_per_second;
    double test_accuracy;
    ct_train_state state; /* the caller frees it (ct_train_state_free) */
} ct_train_result;

/* Trains model (moved to config->device) on data->train for config->epochs epochs with
 * cross-entropy, then measures the accuracy on data->test; through DataParallel over
 * config->data_parallel when it lists devices, or DistributedDataParallel when config->distributed
 * (the wrapper is released at the end, model keeps the trained weights). Seeds ctorch's generator
 * from config->seed first (dropout masks). observer may be NULL. */
ct_status ct_train_run(ct_module *model, const ct_train_data *data, const ct_train_config *config,
                       const ct_train_observer *observer, ct_train_result *result);

/* ---- DistributedDataParallel's part of the loop (tools/train_distributed.c) ---- */
/* A sampler of this rank's share of dataset_size samples, shuffled from config->seed. */
ct_status ct_train_sampler_create(const ct_train_config *config, int64_t dataset_size,
                                  ct_distributed_sampler **out);
/* Sums values[0..count) over the ranks, in place (a collective: every rank calls it at the same
 * point). */
ct_status ct_train_sum_over_ranks(double *values, int count);
/* Every rank compares the settings that must be the same on all (the model, --epochs,
 * --batch-size, --seed, the optimizer, --lr, --amp, --lr-schedule, --clip-grad, --drop-last,
 * --val-fraction, --graph, the training data's size, shape and checksum, and the state resumed
 * from config->resume: its epoch, schedule count and the bytes of the optimizer's and the
 * generators' state):
 * ranks started differently fail together, naming what differs, instead of one of them waiting
 * for ever in a collective the other never calls. A collective. */
ct_status ct_train_agree_on_settings(const ct_train_config *config, const ct_train_data *data);
/* The checks ct_train_run makes of a distributed config: the process group is up, and DataParallel
 * is not asked for too. */
ct_status ct_train_check_distributed(const ct_train_config *config);

/* CT_OK when an epoch of config over train_samples samples has a batch on every rank (world_size
 * processes, 1 alone): DistributedSampler's share of each, in batches of config->batch_size, the
 * last one left out with config->drop_last. Otherwise CT_ERR_INVALID_ARGUMENT naming the options:
 * an epoch without a step would report a loss of 0 and keep the untrained model. */
ct_status ct_train_check_batches(const ct_train_config *config, int64_t train_samples, int world_size);
/* The batches (steps) of such an epoch on each rank. */
int64_t ct_train_batches_per_epoch(const ct_train_config *config, int64_t train_samples, int world_size);

/* The fraction of ds classified right by model (in eval mode, without gradients) on device. */
ct_status ct_train_evaluate(ct_module *model, const ct_dataset *ds, ct_device device, double *accuracy);

/* ---- checkpoints ----
 * The model's state dict in safetensors, with what `ctorch eval` needs to rebuild it in
 * __metadata__: "ctorch.train.model", ".features", ".classes", ".split_seed". */
ct_status ct_train_checkpoint_save(const ct_module *model, ct_train_model kind, int64_t features,
                                   int64_t classes, uint64_t split_seed, const char *path);
/* The same state dict, not saved (NULL after recording the failure). */
ct_state_dict *ct_train_checkpoint_state_dict(const ct_module *model, ct_train_model kind, int64_t features,
                                              int64_t classes, uint64_t split_seed);

/* CT_OK when every model tensor of sd (not the optimizer's or the generators' entries) is of a
 * floating-point dtype, which loading converts to the parameters' float32; an integer or bool
 * tensor is refused (CT_ERR_IO, recorded, naming it): `ctorch eval` and `--resume` refuse it. */
ct_status ct_train_checkpoint_check_dtypes(const ct_state_dict *sd, const char *path);

/* ---- resumable checkpoints (tools/train_resume.c) ----
 * `ctorch train --save` writes the model's checkpoint as above, plus what continuing needs: the
 * optimizer's state dict under "optimizer." names (optimizer.param_groups.0.lr,
 * optimizer.state.0.exp_avg, ...), the generators' state as "ctorch.rng_state", and in
 * __metadata__ the epochs done, the schedule's count and the options that fix the numbers
 * ("ctorch.train.epoch", ".epochs", ".schedule_steps", ".optimizer", ".lr", ".batch_size",
 * ".lr_schedule", ".clip_grad", ".val_fraction", ".train_samples"). The model's tensors keep their
 * plain names: the file still loads in `ctorch eval`, and in Python's safetensors. */
#define CT_TRAIN_RNG_STATE_NAME "ctorch.rng_state"
#define CT_TRAIN_OPTIMIZER_PREFIX "optimizer."
ct_status ct_train_checkpoint_save_run(const ct_module *model, const ct_train_data *data,
                                       const ct_train_config *config, const ct_train_state *state,
                                       const char *path);
/* Removes the resume state's entries from sd (they are not the model's). */
ct_status ct_train_checkpoint_drop_resume_state(ct_state_dict *sd);
/* `--resume path`: checks that the file was saved by ct_train_checkpoint_save_run of a run with
 * config's options and data (CT_ERR_INVALID_ARGUMENT naming the option that differs, and the file's
 * value; CT_ERR_IO for a file that cannot be read or holds no resume state), then loads its
 * weights into model (strictly) and its state into *out (freed with ct_train_state_free). */
ct_status ct_train_checkpoint_resume(const char *path, const ct_train_data *data, const ct_train_config *config,
                                     ct_module *model, ct_train_state *out);

typedef struct ct_train_checkpoint {
    ct_module *model; /* rebuilt and loaded, on the cpu */
    ct_train_model kind;
    int64_t features, classes;
    uint64_t split_seed;
    bool inferred; /* no ctorch metadata: the model read from the tensors, the default split */
    /* What the training multiplied features by: "ctorch.train.feature_scale", CT_TRAIN_DIGITS_SCALE
     * for a file saved before it was kept (all were trained so), 0 when unknown (inferred). */
    double feature_scale;
} ct_train_checkpoint;

#define CT_TRAIN_KEY_FEATURE_SCALE "ctorch.train.feature_scale"
/* Keeps scale in sd's __metadata__ (ct_train_format_number's digits). */
ct_status ct_train_checkpoint_set_scale(ct_state_dict *sd, double scale);

/* Loads path through map_location (ct_load's; NULL keeps the saved devices), rebuilds the model
 * its metadata names (without metadata: the one its tensors make, see below) and loads the weights
 * strictly; names with a "module." prefix (DataParallel) load too. Fails with CT_ERR_IO, naming
 * the file, when it cannot be read, is malformed, holds no model it names or makes, or does not
 * fit the model; with ct_load's CT_ERR_INVALID_ARGUMENT or CT_ERR_DEVICE for
 * a bad map_location or a saved device that is not here and not mapped. */
ct_status ct_train_checkpoint_load(const char *path, const char *map_location, ct_train_checkpoint *out);
/* The same, with the model to rebuild named by the caller (`ctorch eval --model`; NULL: the
 * file's): a file with ctorch's metadata must hold that model; a file without it (a PyTorch
 * user's state dict) is read as that model, or as the one its tensors' names and shapes are
 * (tools/train_checkpoint_infer.c), tested on the split of ctorch train's default seed. */
ct_status ct_train_checkpoint_load_model(const char *path, const char *map_location, const ct_train_model *model,
                                         ct_train_checkpoint *out);
/* The part of that for a state dict sd (its "module." prefixes stripped) without the metadata:
 * fills out's kind, features, classes, split_seed and inferred; CT_ERR_IO naming path and the
 * tensors each model needs when they are not there. */
ct_status ct_train_checkpoint_infer(const ct_state_dict *sd, const char *path, const ct_train_model *model,
                                    ct_train_checkpoint *out);
void ct_train_checkpoint_free(ct_train_checkpoint *checkpoint); /* NULL-safe */

#endif
