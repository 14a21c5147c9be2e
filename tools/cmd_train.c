/* ctorch train: trains the mlp or the cnn on the digits data set (or --data FILE) on the best
 * device (or --device, or with DataParallel over --data-parallel's devices), prints each epoch (a
 * progress bar on a terminal), the test accuracy and the time, and saves a checkpoint with --save.
 * --json prints one JSON object per epoch and a last line {"device", "model", "epochs", "feature_scale",
 * "final_loss", "test_accuracy", "seconds", "samples_per_second", "world_size"}, with
 * "data_parallel" (the devices' names) after "device" under DataParallel.
 * Under MPI's launcher with several processes (`mpirun -np 2 ctorch train`) each process is a rank
 * of a DistributedDataParallel job (tools/tool_job.c): it trains on its device (its local rank's,
 * or --device) with --batch-size samples per step, and rank 0 alone prints the whole job's figures
 * and saves. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"
#include "train.h"

#define COMMAND "train"

typedef struct train_options {
    ct_train_config config;
    const char *device, *data_parallel, *data, *save, *resume;
    double scale; /* --scale; 0: the data's default (ct_train_data_default_scale) */
    bool json, help, allow_nonfinite, tf32, graph, drop_last;
} train_options;

static void usage(FILE *out)
{
    ct_train_config mlp = ct_train_config_default(CT_TRAIN_MLP), cnn = ct_train_config_default(CT_TRAIN_CNN);
    fprintf(out,
            "usage: ctorch train [options]\n\n"
            "  --model mlp|cnn|gpt       the model (default mlp; gpt: see train --model gpt --help)\n"
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
            "  --scale X                 multiply every feature by X, a number or a fraction such as\n"
            "                            1/255 (default: 1/16 for the shipped digits, whose pixels are\n"
            "                            0..16; 1 for any other CSV, read as it is); eval applies the\n"
            "                            same, kept in the checkpoint\n"
            "  --val-fraction F          hold out the fraction F (0 to below 1) of the training set, chosen\n"
            "                            by --seed, and report its accuracy after every epoch (default 0:\n"
            "                            none)\n"
            "  --lr-schedule S           the learning rate's schedule (default none):\n"
            "                              step:STEP[:GAMMA]  times GAMMA (0.1) every STEP epochs (StepLR)\n"
            "                              cosine[:ETA_MIN]   cosine down to ETA_MIN (0) over the epochs\n"
            "                              onecycle[:MAX_LR]  OneCycleLR over every batch, peak MAX_LR (--lr)\n"
            "                              warmup:N[:START]   from START (1/3) times --lr up to --lr over N\n"
            "                                                 epochs (LinearLR)\n"
            "  --clip-grad MAX_NORM      scale the gradients to a 2-norm of at most MAX_NORM each step\n"
            "                            (clip_grad_norm_)\n"
            "  --save FILE               write the model (safetensors) for `ctorch eval` after every epoch,\n"
            "                            with the optimizer's, the schedule's and the generators' state\n"
            "  --resume FILE             continue the run that saved FILE (with the same options) up to\n"
            "                            --epochs in all: the same numbers as a run never stopped\n"
            "  --json                    JSON lines: one per epoch, then the summary (a number that\n"
            "                            is not finite is null, with \"<name>_nonfinite\": \"nan\")\n"
            "  --allow-nonfinite         go on when the loss is not finite (default: stop with exit 1,\n"
            "                            naming the epoch, and save nothing)\n"
            "  --amp bf16|fp16           mixed precision: the forward pass and the loss under autocast in\n"
            "                            bfloat16 or float16 (float32 parameters; fp16 with a gradient\n"
            "                            scaler); default none\n"
            "  --graph                   capture the training step once and replay it for every full\n"
            "                            batch (CUDA graphs; a recorded list of launches on the CPU and\n"
            "                            OpenCL): needs no onecycle schedule, no --amp fp16, one device;\n"
            "                            captured again when the rate changes; the ragged last batch\n"
            "                            runs as usual\n"
            "  --drop-last               leave out each epoch's last batch when it is smaller than\n"
            "                            --batch-size\n"
            "  --tf32                    let float32 products on CUDA use TF32 tensor cores (float32\n"
            "                            matmul precision \"high\"; CTORCH_ALLOW_TF32=1 does the same);\n"
            "                            no effect on the CPU or OpenCL\n\n"
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
    const char *epochs, *batch_size, *lr, *optimizer, *seed, *val_fraction, *lr_schedule, *clip_grad, *amp;
} given;

/* --val-fraction: 0 (none) or a fraction below 1. */
static bool parse_fraction(const char *text, double *out)
{
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (*text == '\0' || *end != '\0' || errno || !(value >= 0.0 && value < 1.0)) {
        fprintf(stderr, "ctorch " COMMAND ": --val-fraction '%s' is not a fraction from 0 (no validation) to "
                "below 1\n", text);
        return false;
    }
    *out = value;
    return true;
}

/* Whether two paths name one file (a link or another spelling of it included). */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return strcmp(a, b) == 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Options that cannot go together, refused while parsing (status 2, before any banner): --graph
 * replays one captured step on one device, and autocast is per thread. */
static bool conflicts_refused(const train_options *o, const ct_tool_job *job)
{
    const char *with = NULL, *why = NULL;
    if (o->graph && ct_train_schedule_steps_per_batch(&o->config.schedule)) {
        with = "--lr-schedule onecycle";
        why = "a replay keeps the learning rate of its capture, and onecycle changes it every batch";
    } else if (o->graph && o->config.amp == CT_F16) {
        with = "--amp fp16";
        why = "the gradient scaler decides on the host whether each step runs";
    } else if (o->graph && o->data_parallel) {
        with = "--data-parallel";
        why = "a captured step runs on one device";
    } else if (o->graph && job->distributed) {
        with = "a launcher's several processes (DistributedDataParallel)";
        why = "a captured step runs on one device, without collectives";
    }
    if (with) {
        fprintf(stderr, "ctorch " COMMAND ": --graph cannot go with %s: %s; leave out one of them\n", with, why);
        return false;
    }
    if (o->config.amp != CT_F32 && o->data_parallel) {
        fprintf(stderr, "ctorch " COMMAND ": --amp %s cannot go with --data-parallel: autocast is per thread and "
                "DataParallel's replicas run in threads of their own; train on one device, or with several "
                "processes (mpirun)\n", ct_train_amp_name(o->config.amp));
        return false;
    }
    return true;
}

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
        if (strcmp(argv[i], "--allow-nonfinite") == 0) {
            o->allow_nonfinite = true;
            continue;
        }
        if (strcmp(argv[i], "--tf32") == 0) {
            o->tf32 = true;
            continue;
        }
        if (strcmp(argv[i], "--graph") == 0 || strcmp(argv[i], "--drop-last") == 0) {
            *(argv[i][2] == 'g' ? &o->graph : &o->drop_last) = true;
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
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--scale", &v)) {
            if (v && !ct_arg_scale(COMMAND, v, &o->scale)) return CT_EXIT_USAGE;
        }
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--save", &v)) o->save = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--resume", &v)) o->resume = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--val-fraction", &v)) g.val_fraction = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--lr-schedule", &v)) g.lr_schedule = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--clip-grad", &v)) g.clip_grad = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--amp", &v)) g.amp = v;
        else {
            static const char *const options[] = {
                "--model", "--epochs", "--batch-size", "--lr", "--optimizer", "--seed", "--device",
                "--data-parallel", "--data", "--scale", "--val-fraction", "--lr-schedule", "--clip-grad", "--amp",
                "--save", "--resume", "--json", "--allow-nonfinite", "--tf32", "--graph", "--drop-last", "--help",
                NULL};
            ct_option_unknown(COMMAND, "", argv[i], options, "ctorch train --help");
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
    o->config.allow_nonfinite = o->allow_nonfinite;
    o->config.graph = o->graph;
    o->config.drop_last = o->drop_last;
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
    if (g.val_fraction && !parse_fraction(g.val_fraction, &o->config.val_fraction)) return CT_EXIT_USAGE;
    if (g.lr_schedule && !ct_train_schedule_parse(g.lr_schedule, &o->config.schedule)) {
        fprintf(stderr, "ctorch " COMMAND ": %s\n", ct_train_error_message());
        return CT_EXIT_USAGE;
    }
    if (g.clip_grad && !ct_arg_double(COMMAND, "--clip-grad", g.clip_grad, 0, 1e30, &o->config.clip_grad))
        return CT_EXIT_USAGE;
    if (g.amp && !ct_train_amp_parse(g.amp, &o->config.amp)) {
        fprintf(stderr, "ctorch " COMMAND ": --amp '%s' is not one of bf16, fp16, none\n", g.amp);
        return CT_EXIT_USAGE;
    }
    if (o->resume && job->rank == 0 && !ct_arg_readable_file(COMMAND, "--resume", o->resume)) return CT_EXIT_USAGE;
    /* In a job, another machine's rank reports its own missing file when it reads it. */
    if (o->data && job->rank == 0 && !ct_arg_readable_file(COMMAND, "--data", o->data)) return CT_EXIT_USAGE;
    /* Fail now rather than after the training: ct_save's own checks of the path (rank 0 saves). */
    if (o->save && job->rank == 0 && ct_save_check_path(o->save) != CT_OK) {
        fprintf(stderr, "ctorch " COMMAND ": --save: %s\n", ct_last_error_message());
        return CT_EXIT_USAGE;
    }
    if (o->save && o->data && same_file(o->save, o->data)) {
        fprintf(stderr, "ctorch " COMMAND ": --save '%s' is the --data file '%s': the first checkpoint would "
                "replace the data set; save elsewhere\n", o->save, o->data);
        return CT_EXIT_USAGE;
    }
    if (!conflicts_refused(o, job)) return CT_EXIT_USAGE;
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
    bool json, bar, scheduled;
    /* --save: where each epoch's checkpoint goes, with what it records */
    const char *save;
    const ct_train_data *data;
    const ct_train_config *config;
    int epochs;
    double epoch_start, last_drawn;
} progress;

enum { BAR_WIDTH = 30 };

/* A bar redrawn in place with \r only on a terminal of a process alone: a log file, a pipe or a
 * launcher's forwarding (mpirun, srun: their rank variables) gets the plain epoch lines. */
static bool wants_bar(void)
{
    if (!isatty(STDOUT_FILENO)) return false;
    const char *launched[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_STEP_ID"};
    for (size_t i = 0; i < sizeof launched / sizeof *launched; i++)
        if (getenv(launched[i])) return false;
    return true;
}

static void draw_bar(void *context, int epoch, int64_t step, int64_t steps, const ct_tensor *loss)
{
    progress *p = context;
    double now = now_seconds();
    if (step == 0) p->epoch_start = now;
    if (step + 1 < steps && now - p->last_drawn < 0.1) return;
    p->last_drawn = now;
    /* Read only when drawn (10 times a second at most): each read waits for the device. */
    double value = NAN;
    if (ct_item(loss, &value) != CT_OK) value = NAN;
    int filled = (int)((step + 1) * BAR_WIDTH / (steps > 0 ? steps : 1));
    char bar[BAR_WIDTH + 1];
    for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < filled ? '#' : '.';
    bar[BAR_WIDTH] = '\0';
    double elapsed = now - p->epoch_start;
    double eta = elapsed / (double)(step + 1) * (double)(steps - step - 1);
    printf("\r\033[Kepoch %d/%d [%s] %lld/%lld  loss %.4f  %.1f s, ETA %.1f s", epoch, p->epochs, bar,
           (long long)(step + 1), (long long)steps, value, elapsed, eta);
    fflush(stdout);
}

static void print_epoch(void *context, const ct_train_epoch *e)
{
    const progress *p = context;
    if (p->json) {
        cJSON *line = ct_json_object();
        ct_json_add_number(line, "epoch", e->epoch);
        ct_json_add_number(line, "epochs", e->epochs);
        ct_json_add_number(line, "loss", e->loss);
        ct_json_add_number(line, "accuracy", e->accuracy);
        if (!isnan(e->val_accuracy)) ct_json_add_number(line, "val_accuracy", e->val_accuracy);
        ct_json_add_number(line, "lr", e->lr);
        ct_json_add_number(line, "samples_per_second", e->samples_per_second);
        ct_json_add_number(line, "seconds", e->seconds);
        ct_json_print_line(stdout, line);
        fflush(stdout);
        return;
    }
    if (p->bar) printf("\r\033[K"); /* clear the bar's line */
    int width = snprintf(NULL, 0, "%d", e->epochs);
    char val[64] = "", lr[64] = "";
    if (!isnan(e->val_accuracy)) snprintf(val, sizeof val, "  val accuracy %6.2f%%", 100 * e->val_accuracy);
    if (p->scheduled) snprintf(lr, sizeof lr, "  lr %.4g", e->lr);
    printf("epoch %*d/%d  loss %.4f  train accuracy %6.2f%%%s%s  %9.0f samples/s  %.2f s\n", width, e->epoch,
           e->epochs, e->loss, 100 * e->accuracy, val, lr, e->samples_per_second, e->seconds);
    fflush(stdout);
}

/* --save after every epoch (atomic: a run stopped at any time leaves its last finished epoch). */
static ct_status save_state(void *context, const ct_module *model, const ct_train_state *state)
{
    const progress *p = context;
    return ct_train_checkpoint_save_run(model, p->data, p->config, state, p->save);
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
    char val[64] = "", extras[160] = "", schedule[96];
    if (data->val) snprintf(val, sizeof val, " (%lld held out for validation)", (long long)ct_dataset_size(data->val));
    ct_train_schedule_format(&o->config.schedule, schedule, sizeof schedule);
    int used = o->config.schedule.kind ? snprintf(extras, sizeof extras, ", schedule %s", schedule) : 0;
    if (o->config.clip_grad > 0)
        used += snprintf(extras + used, sizeof extras - (size_t)used, ", gradients clipped to norm %g",
                         o->config.clip_grad);
    if (o->config.amp != CT_F32)
        snprintf(extras + used, sizeof extras - (size_t)used, ", autocast in %s", ct_dtype_name(o->config.amp));
    printf("Training %s (%lld parameters) on %lld samples%s, testing on %lld: %d epoch%s, batch %lld%s, %s lr %g%s, "
           "seed %llu, features x %g (--scale)\n", ct_train_model_name(o->config.model),
           (long long)ct_module_num_parameters(model),
           (long long)ct_dataset_size(data->train), val, (long long)ct_dataset_size(data->test), o->config.epochs,
           o->config.epochs == 1 ? "" : "s", (long long)o->config.batch_size, split,
           ct_train_optimizer_name(o->config.optimizer), o->config.lr, extras, (unsigned long long)o->config.seed,
           data->feature_scale);
    fflush(stdout);
}

static void print_json_summary(const train_options *o, const ct_tool_job *job, const ct_train_result *result,
                               double seconds, double feature_scale)
{
    char name[CT_DEVICE_STRING_MAX];
    cJSON *line = ct_json_object();
    ct_json_add_string(line, "device", ct_device_format(o->config.device, name, sizeof name));
    if (o->config.data_parallel_count > 0) {
        cJSON *devices = cJSON_AddArrayToObject(line, "data_parallel");
        for (int i = 0; i < o->config.data_parallel_count; i++)
            cJSON_AddItemToArray(devices, cJSON_CreateString(ct_device_format(o->config.data_parallel[i], name,
                                                                              sizeof name)));
    }
    ct_json_add_string(line, "model", ct_train_model_name(o->config.model));
    ct_json_add_number(line, "epochs", o->config.epochs);
    ct_json_add_number(line, "feature_scale", feature_scale);
    ct_json_add_number(line, "final_loss", result->final_loss);
    ct_json_add_number(line, "test_accuracy", result->test_accuracy);
    ct_json_add_number(line, "seconds", seconds);
    ct_json_add_number(line, "samples_per_second", result->samples_per_second);
    ct_json_add_number(line, "world_size", job->world_size);
    ct_json_print_line(stdout, line);
}

/* Trains as the options say; in a job of several processes, as one rank of it. A failure ends the
 * whole job (ct_tool_job_fail); otherwise returns the exit status. */
static int train(const train_options *o, const ct_tool_job *job, double start)
{
    ct_train_data data;
    if (ct_train_data_load_scaled(o->data, o->scale, o->config.seed, &data) != CT_OK)
        return ct_tool_job_fail(COMMAND, job, o->data ? CT_EXIT_USAGE : CT_EXIT_FAILURE, ct_train_error_message());
    /* Options that do not fit the data are the command line's errors: status 2. */
    if (ct_train_data_hold_out(&data, o->config.val_fraction, o->config.seed) != CT_OK) {
        int status = ct_tool_job_fail(COMMAND, job, CT_EXIT_USAGE, ct_train_error_message());
        ct_train_data_free(&data);
        return status;
    }
    ct_manual_seed(o->config.seed); /* the same initial model on every rank (DDP copies rank 0's anyway) */
    ct_module *model = ct_train_model_create(o->config.model, data.features, data.classes);
    ct_train_state resumed = {0};
    ct_train_config config = o->config;
    ct_status resume_status = CT_OK;
    if (model && o->resume) {
        resume_status = ct_train_checkpoint_resume(o->resume, &data, &config, model, &resumed);
        config.resume = &resumed;
    }
    if (!model || resume_status != CT_OK) {
        /* A run that is not the saved one is an option's error; a file that cannot be resumed, a failure. */
        bool usage = !model || resume_status == CT_ERR_INVALID_ARGUMENT;
        int status = ct_tool_job_fail(COMMAND, job, usage ? CT_EXIT_USAGE : CT_EXIT_FAILURE, ct_train_error_message());
        ct_module_release(model);
        ct_train_data_free(&data);
        return status;
    }
    /* Ranks started with different settings end together here, rank 0 naming what differs. */
    ct_status agreed = job->distributed ? ct_train_agree_on_settings(&config, &data) : CT_OK;
    if (agreed == CT_ERR_TIMEOUT) return ct_tool_job_fail(COMMAND, job, CT_EXIT_FAILURE, ct_train_error_message());
    if (agreed != CT_OK) {
        if (job->rank == 0) fprintf(stderr, "ctorch " COMMAND ": %s\n", ct_train_error_message());
        ct_train_state_free(&resumed);
        ct_module_release(model);
        ct_train_data_free(&data);
        return CT_EXIT_USAGE;
    }
    /* Ranks that agree on the data and the options have the same share: all end here together. */
    if (ct_train_check_batches(&config, ct_dataset_size(data.train), job->world_size) != CT_OK) {
        if (job->rank == 0) fprintf(stderr, "ctorch " COMMAND ": %s\n", ct_train_error_message());
        ct_train_state_free(&resumed);
        ct_module_release(model);
        ct_train_data_free(&data);
        return CT_EXIT_USAGE;
    }
    if (!o->json) print_header(o, job, &data, model);
    bool speaks = job->rank == 0;
    if (!o->json && speaks && o->resume)
        printf("Resuming %s after epoch %d of %d\n", o->resume, resumed.epoch, config.epochs);
    progress p = {.json = o->json, .bar = speaks && !o->json && wants_bar(), .epochs = config.epochs,
                  .scheduled = config.schedule.kind != CT_TRAIN_SCHEDULE_NONE, .save = o->save, .data = &data,
                  .config = &config};
    /* Rank 0 alone saves: the plain model (ct_train_run wraps it only while it runs), plain names. */
    ct_train_observer observer = {.on_step = p.bar ? draw_bar : NULL, .on_epoch = speaks ? print_epoch : NULL,
                                  .on_state = o->save && speaks ? save_state : NULL, .context = &p};
    ct_train_result result;
    int exit_status = 0;
    if (ct_train_run(model, &data, &config, &observer, &result) != CT_OK) {
        if (p.bar) printf("\n");
        exit_status = ct_tool_job_fail(COMMAND, job, CT_EXIT_FAILURE, ct_train_error_message());
    }
    ct_train_state_free(&result.state); /* empty when the run failed */
    ct_train_state_free(&resumed);
    double seconds = now_seconds() - start;
    if (exit_status == 0 && speaks && o->json) {
        print_json_summary(o, job, &result, seconds, data.feature_scale);
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
    for (int i = 0; i < argc; i++) /* --model gpt has options of its own (tools/cmd_train_gpt.c) */
        if ((!strcmp(argv[i], "--model") && i + 1 < argc && !strcmp(argv[i + 1], "gpt")) ||
            !strcmp(argv[i], "--model=gpt"))
            return ct_cmd_train_gpt(argc, argv);
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
    /* for the whole run, as torch.set_float32_matmul_precision("high") at the top of a script */
    if (o.tf32 && ct_set_float32_matmul_precision("high") != CT_OK) return ct_tool_job_end(&job, CT_EXIT_FAILURE);
    return ct_tool_job_end(&job, train(&o, &job, start));
}
