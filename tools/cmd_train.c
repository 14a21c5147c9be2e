/* ctorch train: trains the mlp or the cnn on the digits data set (or --data FILE) on the best
 * device (or --device, or with DataParallel over --data-parallel's devices), prints each epoch (a
 * progress bar on a terminal), the test accuracy and the time, and saves a checkpoint with --save.
 * --json prints one JSON object per epoch and a last line {"device", "model", "epochs",
 * "final_loss", "test_accuracy", "seconds", "samples_per_second", "world_size"}, with
 * "data_parallel" (the devices' names) after "device" under DataParallel.
 * Under MPI's launcher with several processes (`mpirun -np 2 ctorch train`) each process is a rank
 * of a DistributedDataParallel job (tools/tool_job.c): it trains on its device (its local rank's,
 * or --device) with --batch-size samples per step, and rank 0 alone prints the whole job's figures
 * and saves. */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"
#include "train.h"

#define COMMAND "train"

typedef struct train_options {
    ct_train_config config;
    const char *device, *data_parallel, *data, *save;
    bool json, help;
} train_options;

static void usage(FILE *out)
{
    ct_train_config mlp = ct_train_config_default(CT_TRAIN_MLP), cnn = ct_train_config_default(CT_TRAIN_CNN);
    fprintf(out,
            "usage: ctorch train [options]\n\n"
            "  --model mlp|cnn           the model (default mlp)\n"
            "  --epochs N                passes over the training set (default %d for mlp, %d for cnn)\n"
            "  --batch-size N            samples per step (default %lld)\n"
            "  --lr X                    the learning rate (default %g for mlp, %g for cnn; %g with sgd)\n"
            "  --optimizer sgd|adam|adamw  (default %s; sgd uses momentum 0.9)\n"
            "  --seed N                  the split, the initialisation and the shuffles (default %llu)\n"
            "  --device D                cpu, opencl:N, cuda:N (default: the best device here)\n"
            "  --data-parallel LIST      DataParallel: split each batch over devices of one type, as\n"
            "                            opencl:0,opencl:1 (the model lives on the first), or opencl\n"
            "                            for every visible OpenCL device\n"
            "  --data FILE               a CSV file, label last (default: the shipped digits)\n"
            "  --save FILE               write the trained model (safetensors) for `ctorch eval`\n"
            "  --json                    JSON lines: one per epoch, then the summary\n\n"
            "Under mpirun -np N (or srun), every process trains a replica with DistributedDataParallel\n"
            "on its share of each epoch: --batch-size is per process, each process takes its local\n"
            "rank's device (CTORCH_DIST_DEVICE=cpu or a list chooses; --device puts all on one), and\n"
            "rank 0 prints and saves.\n",
            mlp.epochs, cnn.epochs, (long long)mlp.batch_size, mlp.lr, cnn.lr,
            ct_train_default_lr(CT_TRAIN_MLP, CT_TRAIN_SGD),
            ct_train_optimizer_name(mlp.optimizer), (unsigned long long)mlp.seed);
}

/* Options given explicitly; the rest take the chosen model's defaults. */
typedef struct given {
    const char *epochs, *batch_size, *lr, *optimizer, *seed;
} given;

/* 0 when the options are good, else the exit status. In a job of several processes the device is
 * chosen later (each rank has its own), and the files are checked by the ranks that use them. */
static int parse(int argc, char **argv, const ct_tool_job *job, train_options *o)
{
    given g = {0};
    const char *model = NULL;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--json") == 0) {
            o->json = true;
            continue;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            if (job->rank == 0) usage(stdout);
            o->help = true;
            return 0;
        }
        if (ct_arg_option(COMMAND, argc, argv, &i, "--model", &v)) model = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--epochs", &v)) g.epochs = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--batch-size", &v)) g.batch_size = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--lr", &v)) g.lr = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--optimizer", &v)) g.optimizer = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--seed", &v)) g.seed = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--device", &v)) o->device = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--data-parallel", &v)) o->data_parallel = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--data", &v)) o->data = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--save", &v)) o->save = v;
        else {
            fprintf(stderr, "ctorch " COMMAND ": unknown option '%s'; the options are --model, --epochs, "
                    "--batch-size, --lr, --optimizer, --seed, --device, --data-parallel, --data, --save, "
                    "--json (ctorch train --help)\n", argv[i]);
            return CT_EXIT_USAGE;
        }
        if (!v) return CT_EXIT_USAGE; /* the option's value was missing: reported */
    }
    ct_train_model kind = CT_TRAIN_MLP;
    if (model && !ct_train_model_parse(model, &kind)) {
        fprintf(stderr, "ctorch " COMMAND ": --model '%s' is not a model; use mlp or cnn\n", model);
        return CT_EXIT_USAGE;
    }
    o->config = ct_train_config_default(kind);
    long long n;
    if (g.epochs) {
        if (!ct_arg_int(COMMAND, "--epochs", g.epochs, 1, 100000, &n)) return CT_EXIT_USAGE;
        o->config.epochs = (int)n;
    }
    if (g.batch_size) {
        if (!ct_arg_int(COMMAND, "--batch-size", g.batch_size, 1, 1 << 20, &n)) return CT_EXIT_USAGE;
        o->config.batch_size = n;
    }
    if (g.optimizer && !ct_train_optimizer_parse(g.optimizer, &o->config.optimizer)) {
        fprintf(stderr, "ctorch " COMMAND ": --optimizer '%s' is not an optimizer; use sgd, adam or adamw\n",
                g.optimizer);
        return CT_EXIT_USAGE;
    }
    o->config.lr = ct_train_default_lr(kind, o->config.optimizer);
    if (g.lr && !ct_arg_double(COMMAND, "--lr", g.lr, 0, 100, &o->config.lr)) return CT_EXIT_USAGE;
    if (g.seed && !ct_arg_uint64(COMMAND, "--seed", g.seed, &o->config.seed)) return CT_EXIT_USAGE;
    /* In a job, another machine's rank reports its own missing file when it reads it. */
    if (o->data && job->rank == 0 && !ct_arg_readable_file(COMMAND, "--data", o->data)) return CT_EXIT_USAGE;
    if (o->save && job->rank == 0) { /* rank 0 alone writes it */
        /* Fail now rather than after the training: the checkpoint's folder must be writable. */
        char *copy = strdup(o->save);
        const char *folder = copy ? dirname(copy) : ".";
        bool writable = access(folder, W_OK) == 0;
        if (!writable)
            fprintf(stderr, "ctorch " COMMAND ": --save '%s': cannot write into the folder '%s': %s\n", o->save,
                    folder, strerror(errno));
        free(copy);
        if (!writable) return CT_EXIT_USAGE;
    }
    if (o->data_parallel && job->distributed) {
        fprintf(stderr, "ctorch " COMMAND ": --data-parallel drives several devices from one process, but the "
                "launcher started %d processes (DistributedDataParallel, a device each); give one or the other\n",
                job->world_size);
        return CT_EXIT_USAGE;
    }
    if (job->distributed) return 0;
    if (o->data_parallel) {
        if (!ct_tool_choose_data_parallel(COMMAND, o->data_parallel, o->device, o->config.data_parallel,
                                          CT_TRAIN_MAX_DEVICES, &o->config.data_parallel_count))
            return CT_EXIT_USAGE;
        o->config.device = o->config.data_parallel[0];
        return 0;
    }
    if (!ct_tool_choose_device(COMMAND, job, o->device, &o->config.device)) return CT_EXIT_USAGE;
    return 0;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- what the loop reports ---- */
typedef struct progress {
    bool json, bar;
    int epochs;
    double epoch_start, last_drawn;
} progress;

enum { BAR_WIDTH = 30 };

static void draw_bar(void *context, int epoch, int64_t step, int64_t steps, const ct_tensor *loss)
{
    (void)loss; /* not read: that would wait for the device at every step */
    progress *p = context;
    double now = now_seconds();
    if (step == 0) p->epoch_start = now;
    if (step + 1 < steps && now - p->last_drawn < 0.05) return;
    p->last_drawn = now;
    int filled = (int)((step + 1) * BAR_WIDTH / (steps > 0 ? steps : 1));
    char bar[BAR_WIDTH + 1];
    for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < filled ? '#' : '.';
    bar[BAR_WIDTH] = '\0';
    printf("\repoch %d/%d [%s] %lld/%lld  %.1f s", epoch, p->epochs, bar, (long long)(step + 1), (long long)steps,
           now - p->epoch_start);
    fflush(stdout);
}

static void print_epoch(void *context, const ct_train_epoch *e)
{
    const progress *p = context;
    if (p->json) {
        printf("{\"epoch\": %d, \"epochs\": %d, \"loss\": %.6g, \"accuracy\": %.6g, \"samples_per_second\": %.6g, "
               "\"seconds\": %.6g}\n", e->epoch, e->epochs, e->loss, e->accuracy, e->samples_per_second, e->seconds);
        return;
    }
    if (p->bar) printf("\r\033[K"); /* clear the bar's line */
    int width = snprintf(NULL, 0, "%d", e->epochs);
    printf("epoch %*d/%d  loss %.4f  accuracy %6.2f%%  %9.0f samples/s  %.2f s\n", width, e->epoch, e->epochs,
           e->loss, 100 * e->accuracy, e->samples_per_second, e->seconds);
    fflush(stdout);
}

/* "Using CPU", "Using DataParallel over ...", or the job's devices (a collective then), and the
 * training's settings; rank 0 prints. */
static void print_header(const train_options *o, const ct_tool_job *job, const ct_train_data *data,
                         const ct_module *model)
{
    int dp_count = o->config.data_parallel_count;
    if (job->distributed) {
        if (!ct_tool_job_print_using(stdout, job, o->config.device))
            ct_tool_job_fail(COMMAND, job, CT_EXIT_FAILURE, ct_last_error_message());
    } else if (dp_count > 0) {
        ct_tool_print_using_data_parallel(stdout, o->config.data_parallel, dp_count);
    } else {
        ct_tool_print_using(stdout, o->config.device);
    }
    if (job->rank != 0) return;
    char split[64] = "";
    if (dp_count > 1) snprintf(split, sizeof split, " split over %d devices", dp_count);
    if (job->distributed)
        snprintf(split, sizeof split, " per process (%lld in all)",
                 (long long)o->config.batch_size * job->world_size);
    printf("Training %s (%lld parameters) on %lld samples, testing on %lld: %d epoch%s, batch %lld%s, %s lr %g, "
           "seed %llu\n", ct_train_model_name(o->config.model), (long long)ct_module_num_parameters(model),
           (long long)ct_dataset_size(data->train), (long long)ct_dataset_size(data->test), o->config.epochs,
           o->config.epochs == 1 ? "" : "s", (long long)o->config.batch_size, split,
           ct_train_optimizer_name(o->config.optimizer), o->config.lr, (unsigned long long)o->config.seed);
    fflush(stdout);
}

static void print_json_summary(const train_options *o, const ct_tool_job *job, const ct_train_result *result,
                               double seconds)
{
    char device_name[CT_DEVICE_STRING_MAX];
    printf("{\"device\": ");
    ct_json_write_string(stdout, ct_device_format(o->config.device, device_name, sizeof device_name));
    int dp_count = o->config.data_parallel_count;
    if (dp_count > 0) {
        printf(", \"data_parallel\": [");
        for (int i = 0; i < dp_count; i++) {
            char name[CT_DEVICE_STRING_MAX];
            if (i > 0) printf(", ");
            ct_json_write_string(stdout, ct_device_format(o->config.data_parallel[i], name, sizeof name));
        }
        printf("]");
    }
    printf(", \"model\": \"%s\", \"epochs\": %d, \"final_loss\": %.6g, \"test_accuracy\": %.6g, "
           "\"seconds\": %.4g, \"samples_per_second\": %.6g, \"world_size\": %d}\n",
           ct_train_model_name(o->config.model), o->config.epochs, result->final_loss, result->test_accuracy,
           seconds, result->samples_per_second, job->world_size);
}

/* Trains as the options say; in a job of several processes, as one rank of it. A failure ends the
 * whole job (ct_tool_job_fail); otherwise returns the exit status. */
static int train(const train_options *o, const ct_tool_job *job, double start)
{
    ct_train_data data;
    if (ct_train_data_load(o->data, o->config.seed, &data) != CT_OK)
        return ct_tool_job_fail(COMMAND, job, o->data ? CT_EXIT_USAGE : CT_EXIT_FAILURE, ct_train_error_message());
    ct_manual_seed(o->config.seed); /* the same initial model on every rank (DDP copies rank 0's anyway) */
    ct_module *model = ct_train_model_create(o->config.model, data.features, data.classes);
    if (!model) {
        int status = ct_tool_job_fail(COMMAND, job, CT_EXIT_USAGE, ct_train_error_message());
        ct_train_data_free(&data);
        return status;
    }
    /* Ranks started with different settings end together here, rank 0 naming what differs. */
    ct_status agreed = job->distributed ? ct_train_agree_on_settings(&o->config, &data) : CT_OK;
    if (agreed == CT_ERR_TIMEOUT) return ct_tool_job_fail(COMMAND, job, CT_EXIT_FAILURE, ct_train_error_message());
    if (agreed != CT_OK) {
        if (job->rank == 0) fprintf(stderr, "ctorch " COMMAND ": %s\n", ct_train_error_message());
        ct_module_release(model);
        ct_train_data_free(&data);
        return CT_EXIT_USAGE;
    }
    if (!o->json) print_header(o, job, &data, model);
    bool speaks = job->rank == 0;
    progress p = {.json = o->json, .bar = speaks && !o->json && isatty(STDOUT_FILENO), .epochs = o->config.epochs};
    ct_train_observer observer = {.on_step = p.bar ? draw_bar : NULL, .on_epoch = speaks ? print_epoch : NULL,
                                  .context = &p};
    ct_train_result result;
    int exit_status = 0;
    if (ct_train_run(model, &data, &o->config, &observer, &result) != CT_OK) {
        if (p.bar) printf("\n");
        exit_status = ct_tool_job_fail(COMMAND, job, CT_EXIT_FAILURE, ct_train_error_message());
    } else if (o->save && speaks && /* the plain model (ct_train_run wraps it only while it runs): plain names */
               ct_train_checkpoint_save(model, o->config.model, data.features, data.classes, o->config.seed,
                                        o->save) != CT_OK) {
        exit_status = ct_tool_job_fail(COMMAND, job, CT_EXIT_FAILURE, ct_train_error_message());
    }
    double seconds = now_seconds() - start;
    if (exit_status == 0 && speaks && o->json) {
        print_json_summary(o, job, &result, seconds);
    } else if (exit_status == 0 && speaks) {
        int64_t tested = ct_dataset_size(data.test);
        printf("Test accuracy: %.2f%% (%lld/%lld)\n", 100 * result.test_accuracy,
               (long long)llround(result.test_accuracy * (double)tested), (long long)tested);
        if (o->save) printf("Saved the model to %s (ctorch eval --checkpoint %s)\n", o->save, o->save);
        printf("Time: %.2f s (training %.2f s, %.0f samples/s)\n", seconds, result.train_seconds,
               result.samples_per_second);
    }
    fflush(stdout);
    ct_module_release(model);
    ct_train_data_free(&data);
    return exit_status;
}

int ct_cmd_train(int argc, char **argv)
{
    double start = now_seconds();
    ct_tool_job job;
    if (!ct_tool_job_start(COMMAND, &job)) return CT_EXIT_FAILURE;
    train_options o = {0};
    ct_tool_job_quiet_begin(&job);
    int status = parse(argc, argv, &job, &o);
    ct_tool_job_quiet_end(&job);
    if (status == 0 && !o.help && job.distributed &&
        !ct_tool_choose_device(COMMAND, &job, o.device, &o.config.device))
        status = CT_EXIT_USAGE;
    o.config.distributed = job.distributed;
    /* Every rank has checked its part: they go on, or end, together. */
    status = ct_tool_job_agree(&job, status);
    if (status != 0 || o.help) return ct_tool_job_end(&job, status);
    return ct_tool_job_end(&job, train(&o, &job, start));
}
