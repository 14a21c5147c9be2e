/* libFuzzer harness for `ctorch train --resume`: each input is a resume file. Its __metadata__
 * chooses the run's options (as a user would give them to match it), then the file goes through
 * what --resume does: ct_train_checkpoint_resume (the options, the data's count and checksum, the
 * epochs, the schedule's count, the model's weights, the optimizer's entries, the generators' and
 * the gradient scaler's state), and an epoch of ct_train_run from it (the optimizer's state dict
 * loaded into SGD, Adam or AdamW, the scheduler set to its count, the generators, the scaler).
 * Every input must be resumed and trained or refused with a recorded message, and never crash,
 * read out of bounds, overflow (UBSan) or leak.
 *
 * The data is a fixed set of 16 training samples of 16 features and 3 classes, so a file saved from it passes
 * the data's checks and the fuzzer reaches the state behind them. With CT_FUZZ_MAKE_SEEDS=<folder>
 * set, the harness first writes seed files there: runs of each optimizer, schedule and --amp,
 * saved after an epoch (scripts/fuzz-checkpoint-loader starts from them). Built with
 * -fsanitize=fuzzer where the compiler has it, else with CT_FUZZ_STANDALONE: a main that makes
 * the seeds in a temporary folder and runs each once (the ctest). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train.h"

enum { SAMPLES = 20, FEATURES = 16, CLASSES = 3 };

static int input_fd = -1;
static char input_path[64];
static ct_train_data data;
static int resumed; /* inputs resumed and trained */

/* 20 samples (16 for training, 4 for testing), made the same every time. */
static void make_data(void)
{
    if (data.train) return;
    float features[SAMPLES * FEATURES];
    int64_t labels[SAMPLES];
    for (int i = 0; i < SAMPLES; i++) {
        for (int f = 0; f < FEATURES; f++) features[i * FEATURES + f] = (float)((i * 7 + f * 3) % 17) / 16.0f;
        labels[i] = i % CLASSES;
    }
    ct_tensor *x = ct_tensor_from_data(features, CT_F32, (int64_t[]){SAMPLES, FEATURES}, 2, CT_DEVICE_CPU);
    ct_tensor *y = ct_tensor_from_data(labels, CT_I64, (int64_t[]){SAMPLES}, 1, CT_DEVICE_CPU);
    ct_dataset *all = ct_dataset_from_tensors(x, y);
    ct_release(x);
    ct_release(y);
    if (!all || ct_dataset_split(all, CT_TRAIN_TEST_FRACTION, 0, &data.train, &data.test) != CT_OK) abort();
    data.features = FEATURES;
    data.classes = CLASSES;
    ct_dataset_free(all);
}

/* The config a user would give to resume sd: its metadata's options where they parse, the
 * defaults otherwise (the checks then refuse the file). */
static ct_train_config config_of(const ct_state_dict *sd)
{
    const char *model = ct_state_dict_metadata(sd, "ctorch.train.model");
    ct_train_model kind = CT_TRAIN_MLP;
    if (model) ct_train_model_parse(model, &kind);
    ct_train_config c = ct_train_config_default(kind);
    c.batch_size = 4;
    c.epochs = 2;
    const char *text;
    char *end;
    if ((text = ct_state_dict_metadata(sd, "ctorch.train.optimizer"))) ct_train_optimizer_parse(text, &c.optimizer);
    c.lr = ct_train_default_lr(kind, c.optimizer);
    if ((text = ct_state_dict_metadata(sd, "ctorch.train.lr"))) {
        double lr = strtod(text, &end);
        if (!*end && lr > 0 && lr <= 100) c.lr = lr;
    }
    if ((text = ct_state_dict_metadata(sd, "ctorch.train.batch_size"))) {
        long long b = strtoll(text, &end, 10);
        if (!*end && b >= 1 && b <= 64) c.batch_size = b;
    }
    /* "onecycle:0" is how a file keeps onecycle's default peak (--lr) */
    if ((text = ct_state_dict_metadata(sd, "ctorch.train.lr_schedule")) && !ct_train_schedule_parse(text, &c.schedule))
        ct_train_schedule_parse(strcmp(text, "onecycle:0") == 0 ? "onecycle" : "none", &c.schedule);
    if ((text = ct_state_dict_metadata(sd, "ctorch.train.clip_grad"))) {
        double clip = strtod(text, &end);
        if (!*end && clip >= 0 && clip <= 1e30) c.clip_grad = clip;
    }
    if ((text = ct_state_dict_metadata(sd, "ctorch.train.amp"))) ct_train_amp_parse(text, &c.amp);
    if ((text = ct_state_dict_metadata(sd, "ctorch.train.drop_last"))) c.drop_last = strcmp(text, "yes") == 0;
    /* one epoch more than the file's, or the total a laid-out schedule needs */
    long long epoch = 0, epochs = 0;
    if ((text = ct_state_dict_metadata(sd, "ctorch.train.epoch"))) epoch = strtoll(text, &end, 10);
    if ((text = ct_state_dict_metadata(sd, "ctorch.train.epochs"))) epochs = strtoll(text, &end, 10);
    if (epoch >= 0 && epoch < 8) c.epochs = (int)epoch + 1;
    if ((c.schedule.kind == CT_TRAIN_SCHEDULE_COSINE || c.schedule.kind == CT_TRAIN_SCHEDULE_ONECYCLE) &&
        epochs > epoch && epochs <= 8)
        c.epochs = (int)epochs;
    return c;
}

static void resume_once(void)
{
    ct_clear_error();
    ct_state_dict *sd = ct_load(input_path, "cpu");
    if (!sd) return; /* the loader's own fuzz target covers its refusals */
    ct_train_config config = config_of(sd);
    ct_state_dict_free(sd);
    ct_manual_seed(config.seed);
    ct_module *model = ct_train_model_create(config.model, data.features, data.classes);
    if (!model) abort();
    ct_train_state state;
    ct_status status = ct_train_checkpoint_resume(input_path, &data, &config, model, &state);
    if (getenv("CT_FUZZ_VERBOSE") && status != CT_OK) fprintf(stderr, "resume: %s\n", ct_train_error_message());
    if (status == CT_OK) {
        config.resume = &state;
        ct_train_result result;
        status = ct_train_run(model, &data, &config, NULL, &result);
        resumed += status == CT_OK;
        if (getenv("CT_FUZZ_VERBOSE") && status != CT_OK) fprintf(stderr, "run: %s\n", ct_train_error_message());
        ct_train_state_free(&result.state);
        ct_train_state_free(&state);
    }
    if (status != CT_OK && ct_train_error_message()[0] == '\0') abort(); /* a refusal says why */
    ct_module_release(model);
    ct_clear_error();
}

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size)
{
    make_data();
    if (input_fd < 0) {
        input_fd = memfd_create("ctorch-fuzz-resume", MFD_CLOEXEC);
        if (input_fd < 0) abort();
        snprintf(input_path, sizeof input_path, "/proc/self/fd/%d", input_fd);
    }
    if (ftruncate(input_fd, 0) != 0) abort();
    if (size > 0 && pwrite(input_fd, bytes, size, 0) != (ssize_t)size) abort();
    resume_once();
    return 0;
}

typedef struct seed_target {
    const char *path;
    const ct_train_config *config; /* what the file records */
} seed_target;

/* Saves after the first epoch, then stops the run (a status other than CT_OK ends it). */
static ct_status save_seed(void *context, const ct_module *model, const ct_train_state *state)
{
    const seed_target *t = context;
    ct_status status = ct_train_checkpoint_save_run(model, &data, t->config, state, t->path);
    return status == CT_OK ? ct_train_fail(CT_ERR_INVALID_ARGUMENT, "stopped after saving") : status;
}

/* Seeds in folder: one epoch of each optimizer with each schedule, and under --amp fp16 and bf16,
 * with clipping and --drop-last in some. */
static void make_seeds(const char *folder)
{
    make_data();
    mkdir(folder, 0755);
    const char *schedules[] = {"none", "step:1:0.5", "cosine", "onecycle", "warmup:2"};
    int n = 0;
    for (int o = 0; o < CT_TRAIN_OPTIMIZER_COUNT; o++) {
        for (size_t s = 0; s < sizeof schedules / sizeof *schedules; s++) {
            for (int a = 0; a < 3; a++) {
                ct_train_config c = ct_train_config_default(CT_TRAIN_MLP);
                c.optimizer = (ct_train_optimizer)o;
                c.lr = ct_train_default_lr(CT_TRAIN_MLP, c.optimizer);
                c.batch_size = 4;
                c.epochs = 2;
                c.amp = a == 0 ? CT_F32 : a == 1 ? CT_F16 : CT_BF16;
                c.clip_grad = s == 1 ? 0.5 : 0.0;
                c.drop_last = s == 2;
                if (!ct_train_schedule_parse(schedules[s], &c.schedule)) abort();
                char path[4096];
                snprintf(path, sizeof path, "%s/seed_%02d.safetensors", folder, n++);
                /* a run of 2 epochs stopped after the first: the file saved then resumes */
                seed_target target = {path, &c};
                ct_train_observer observer = {.on_state = save_seed, .context = &target};
                ct_manual_seed(c.seed);
                ct_module *model = ct_train_model_create(c.model, data.features, data.classes);
                ct_train_result result;
                if (!model || ct_train_run(model, &data, &c, &observer, &result) != CT_ERR_INVALID_ARGUMENT ||
                    !strstr(ct_train_error_message(), "stopped after saving")) {
                    fprintf(stderr, "fuzz_train_resume: a seed run failed: %s\n", ct_train_error_message());
                    abort();
                }
                ct_train_state_free(&result.state);
                ct_module_release(model);
            }
        }
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *folder = getenv("CT_FUZZ_MAKE_SEEDS");
    if (folder && *folder) make_seeds(folder);
    return 0;
}

#ifdef CT_FUZZ_STANDALONE
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 1;
    size_t capacity = 4096, size = 0;
    unsigned char *bytes = malloc(capacity);
    for (size_t n; bytes && (n = fread(bytes + size, 1, capacity - size, f)) > 0;) {
        size += n;
        if (size == capacity) bytes = realloc(bytes, capacity *= 2);
    }
    fclose(f);
    if (!bytes) return 1;
    LLVMFuzzerTestOneInput(bytes, size);
    free(bytes);
    return 0;
}

/* Makes the seeds in a temporary folder (or runs the files and folders named) and runs each once. */
int main(int argc, char **argv)
{
    char folder[] = "/tmp/ctorch_fuzz_resume_XXXXXX";
    const char *made = NULL;
    if (argc < 2) {
        if (!mkdtemp(folder)) return 1;
        make_seeds(folder);
        made = folder;
    }
    int failures = 0, count = 0;
    for (int a = made ? 0 : 1; a < (made ? 1 : argc); a++) {
        const char *name = made ? made : argv[a];
        struct stat info;
        if (stat(name, &info) == 0 && S_ISDIR(info.st_mode)) {
            DIR *dir = opendir(name);
            for (struct dirent *e; dir && (e = readdir(dir));) {
                if (e->d_name[0] == '.') continue;
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", name, e->d_name);
                failures += run_file(path);
                count++;
                if (made) unlink(path);
            }
            if (dir) closedir(dir);
        } else {
            failures += run_file(name);
            count++;
        }
    }
    if (made) rmdir(made);
    ct_train_data_free(&data);
    printf("fuzz_train_resume: ran %d input%s, %d resumed and trained\n", count, count == 1 ? "" : "s", resumed);
    /* every seed is a file its run resumes */
    if (made && resumed != count) {
        fprintf(stderr, "fuzz_train_resume: %d of the %d seeds did not resume\n", count - resumed, count);
        failures++;
    }
    if (input_fd >= 0) close(input_fd);
    return failures || count == 0;
}
#endif
