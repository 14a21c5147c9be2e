/* ctorch train --model gpt: trains a GPT-2-style model on a token file or text (the shipped
 * Shakespeare by default), printing each step's loss, tokens/s and on a GPU the model FLOPs
 * utilisation, the validation loss every --eval-every steps, and a short sample at the end.
 * --json prints {"step", "loss", "lr", "tokens_per_second"} per step ("val_loss" when evaluated),
 * then a summary with "val_loss". Under mpirun each process is a DDP rank on its own windows. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool.h"
#include "train_gpt.h"

#define COMMAND "train"

typedef struct gpt_options {
    ct_gpt_train_config config;
    const char *device, *data_parallel, *data, *val_data, *save, *resume, *init, *map_location;
    bool json, help, tf32, model_given;
    int64_t sample_tokens;
} gpt_options;

static void usage(FILE *out)
{
    ct_gpt_train_config d = ct_gpt_train_config_default();
    fprintf(out,
            "usage: ctorch train --model gpt [options]\n\n"
            "  --data FILE               llm.c's token file (.bin, GPT-2 tokens) or text read as bytes\n"
            "                            (default: the shipped Shakespeare)\n"
            "  --layers L --heads H --channels C   the model (default %lld, %lld, %lld)\n"
            "  --seq-len T               tokens per window, also the block size (default %lld)\n"
            "  --steps N                 optimizer steps (default %lld)\n"
            "  --batch-size B            windows per micro-batch (per process under mpirun; default %lld)\n"
            "  --grad-accum K            micro-batches per step, their gradients summed (default 1)\n"
            "  --lr X                    the peak learning rate (default %g)\n"
            "  --weight-decay X          AdamW's, on the 2-D weights only (default %g; 0 turns it off)\n"
            "  --betas B1,B2             AdamW's betas, each from 0 to below 1 (default %g,%g; llm.c's 0.9,0.999)\n"
            "  --lr-schedule S           warmup-cosine:WARMUP[:MIN_LR_FACTOR] (default warmup-cosine:%lld:%g),\n"
            "                            or none\n"
            "  --clip-grad MAX_NORM      clip the gradients' 2-norm (default %g; 0 turns it off)\n"
            "  --eval-every N --eval-batches M  validation loss every N steps over M batches (default %lld,\n"
            "                            %lld; it is always measured after the last step)\n"
            "  --val-fraction F          the file's last fraction F validates (default 0.1)\n"
            "  --val-data FILE           validate on FILE instead (llm.c's separate val tokens); --data all trains\n"
            "  --data-order random|sequential  windows at random offsets from --seed, or one after another\n"
            "                            as llm.c's loader (default random)\n"
            "  --init FILE               start from a GPT checkpoint: nanoGPT's or Hugging Face's safetensors,\n"
            "                            or llm.c's .bin (its config from the file)\n"
            "  --map-location M          where --init's tensors load (as torch.load's)\n"
            "  --save FILE               after every evaluation: the model in safetensors with nanoGPT's\n"
            "                            names and config (nanoGPT's GPT loads it as it is), and beside\n"
            "                            it FILE.state, what --resume continues from\n"
            "  --resume FILE             continue the run that saved FILE, with the same options\n"
            "  --seed N                  initialisation and windows (default %llu)\n"
            "  --device D, --data-parallel LIST, --amp bf16|fp16, --tf32, --graph  as for the other models\n"
            "                            (--graph: a replay keeps the rate of its capture, so under\n"
            "                            warmup-cosine the step is captured again each step; with\n"
            "                            --lr-schedule none it is replayed)\n"
            "  --sample N                bytes to sample at the end (default 200 with text; 0: none)\n"
            "  --json                    a JSON line per step, then the summary\n\n"
            "Under mpirun -np N every process trains a DDP replica on its own windows: --batch-size is per\n"
            "process.\n",
            (long long)d.model.n_layer, (long long)d.model.n_head, (long long)d.model.n_embd, (long long)d.seq_len,
            (long long)d.steps, (long long)d.batch_size, d.lr, d.weight_decay, d.beta1, d.beta2, (long long)d.warmup, d.min_lr_factor,
            d.clip_grad, (long long)d.eval_every, (long long)d.eval_batches, (unsigned long long)d.seed);
}

typedef struct given {
    const char *layers, *heads, *channels, *seq_len, *steps, *batch_size, *grad_accum, *lr, *weight_decay,
        *lr_schedule, *clip_grad, *eval_every, *eval_batches, *val_fraction, *data_order, *seed, *amp, *sample, *betas;
} given;

static bool parse_count(const char *option, const char *text, long long min, long long max, int64_t *out)
{
    long long n;
    if (!text) return true;
    if (!ct_arg_int(COMMAND, option, text, min, max, &n)) return false;
    *out = n;
    return true;
}

static bool parse_number(const char *option, const char *text, double min, double max, bool zero, double *out)
{
    if (!text) return true;
    if (zero && strcmp(text, "0") == 0) {
        *out = 0;
        return true;
    }
    return ct_arg_double(COMMAND, option, text, min, max, out);
}

/* warmup-cosine:WARMUP[:MIN_LR_FACTOR] or none */
static bool parse_schedule(const char *text, ct_gpt_train_config *c)
{
    if (strcmp(text, "none") == 0) {
        c->schedule = false;
        return true;
    }
    const char *prefix = "warmup-cosine:";
    char *end = NULL;
    errno = 0;
    if (strncmp(text, prefix, strlen(prefix)) == 0) {
        long long warmup = strtoll(text + strlen(prefix), &end, 10);
        double factor = 0.1;
        bool good = end != text + strlen(prefix) && warmup >= 0 && !errno;
        if (good && *end == ':') {
            char *tail;
            factor = strtod(end + 1, &tail);
            good = tail != end + 1 && *tail == '\0' && factor >= 0 && factor <= 1;
        } else {
            good = good && *end == '\0';
        }
        if (good) {
            c->schedule = true;
            c->warmup = warmup;
            c->min_lr_factor = factor;
            return true;
        }
    }
    fprintf(stderr, "ctorch " COMMAND ": --lr-schedule '%s' is not warmup-cosine:WARMUP[:MIN_LR_FACTOR] (WARMUP "
            "steps from 0, MIN_LR_FACTOR from 0 to 1, 0.1 by default) or none\n", text);
    return false;
}

/* B1,B2: AdamW's betas, each in [0, 1) */
static bool parse_betas(const char *text, ct_gpt_train_config *c)
{
    char *end = NULL, *tail = NULL;
    errno = 0;
    double b1 = strtod(text, &end), b2 = NAN;
    if (end != text && *end == ',') b2 = strtod(end + 1, &tail);
    if (!errno && tail && tail != end + 1 && *tail == '\0' && b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1) {
        c->beta1 = b1;
        c->beta2 = b2;
        return true;
    }
    fprintf(stderr, "ctorch " COMMAND ": --betas '%s' is not B1,B2 (AdamW's betas, each from 0 to below 1, as "
            "0.9,0.999)\n", text);
    return false;
}

static int parse(int argc, char **argv, const ct_tool_job *job, gpt_options *o)
{
    given g = {0};
    o->config = ct_gpt_train_config_default();
    o->sample_tokens = -1;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "--tf32") == 0 || strcmp(argv[i], "--graph") == 0) {
            *(argv[i][2] == 'j' ? &o->json : argv[i][2] == 't' ? &o->tf32 : &o->config.graph) = true;
            continue;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            if (job->rank == 0) usage(stdout);
            o->help = true;
            return 0;
        }
        if (ct_arg_option(COMMAND, argc, argv, &i, "--model", &v)) o->model_given = true;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--data-parallel", &v)) o->data_parallel = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--data-order", &v)) g.data_order = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--data", &v)) o->data = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--val-data", &v)) o->val_data = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--betas", &v)) g.betas = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--layers", &v)) g.layers = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--heads", &v)) g.heads = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--channels", &v)) g.channels = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--seq-len", &v)) g.seq_len = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--steps", &v)) g.steps = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--batch-size", &v)) g.batch_size = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--grad-accum", &v)) g.grad_accum = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--lr-schedule", &v)) g.lr_schedule = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--lr", &v)) g.lr = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--weight-decay", &v)) g.weight_decay = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--clip-grad", &v)) g.clip_grad = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--eval-every", &v)) g.eval_every = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--eval-batches", &v)) g.eval_batches = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--val-fraction", &v)) g.val_fraction = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--seed", &v)) g.seed = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--amp", &v)) g.amp = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--sample", &v)) g.sample = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--device", &v)) o->device = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--init", &v)) o->init = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--map-location", &v)) o->map_location = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--save", &v)) o->save = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--resume", &v)) o->resume = v;
        else {
            static const char *const options[] = {
                "--data", "--layers", "--heads", "--channels", "--seq-len", "--steps", "--batch-size",
                "--grad-accum", "--lr", "--weight-decay", "--betas", "--val-data", "--lr-schedule", "--clip-grad", "--eval-every",
                "--eval-batches", "--val-fraction", "--data-order", "--init", "--map-location", "--save", "--resume",
                "--seed", "--device", "--data-parallel", "--amp", "--tf32", "--graph", "--sample", "--json",
                "--help", NULL};
            ct_option_unknown(COMMAND, " for --model gpt", argv[i], options, "ctorch train --model gpt --help");
            return CT_EXIT_USAGE;
        }
        if (!v) return CT_EXIT_USAGE;
    }
    ct_gpt_train_config *c = &o->config;
    if (o->init && (g.layers || g.heads || g.channels)) {
        fprintf(stderr, "ctorch " COMMAND ": --init takes the model's size from the file; leave out --layers, "
                "--heads and --channels\n");
        return CT_EXIT_USAGE;
    }
    if (!parse_count("--layers", g.layers, 1, 1024, &c->model.n_layer) ||
        !parse_count("--heads", g.heads, 1, 1024, &c->model.n_head) ||
        !parse_count("--channels", g.channels, 1, 1 << 16, &c->model.n_embd) ||
        !parse_count("--seq-len", g.seq_len, 1, 1 << 20, &c->seq_len) ||
        !parse_count("--steps", g.steps, 1, 100000000, &c->steps) ||
        !parse_count("--batch-size", g.batch_size, 1, 1 << 20, &c->batch_size) ||
        !parse_count("--grad-accum", g.grad_accum, 1, 64, &c->grad_accum) ||
        !parse_count("--eval-every", g.eval_every, 0, 100000000, &c->eval_every) ||
        !parse_count("--eval-batches", g.eval_batches, 1, 1 << 20, &c->eval_batches) ||
        !parse_count("--sample", g.sample, 0, 1 << 20, &o->sample_tokens))
        return CT_EXIT_USAGE;
    if (g.seq_len) c->model.block_size = c->seq_len; /* the block is the window unless --init says */
    if (!parse_number("--lr", g.lr, 0, 100, false, &c->lr) ||
        !parse_number("--weight-decay", g.weight_decay, 0, 100, true, &c->weight_decay) ||
        !parse_number("--clip-grad", g.clip_grad, 0, 1e30, true, &c->clip_grad))
        return CT_EXIT_USAGE;
    if (g.lr_schedule && !parse_schedule(g.lr_schedule, c)) return CT_EXIT_USAGE;
    if (c->schedule && c->warmup >= c->steps && g.steps && !g.lr_schedule) c->warmup = c->steps / 10;
    if (g.seed && !ct_arg_uint64(COMMAND, "--seed", g.seed, &c->seed)) return CT_EXIT_USAGE;
    if (g.amp && !ct_train_amp_parse(g.amp, &c->amp)) {
        fprintf(stderr, "ctorch " COMMAND ": --amp '%s' is not one of bf16, fp16, none\n", g.amp);
        return CT_EXIT_USAGE;
    }
    if (g.data_order) {
        if (strcmp(g.data_order, "random") && strcmp(g.data_order, "sequential")) {
            fprintf(stderr, "ctorch " COMMAND ": --data-order '%s' is not random or sequential\n", g.data_order);
            return CT_EXIT_USAGE;
        }
        c->order = g.data_order[0] == 's' ? CT_TOKEN_ORDER_SEQUENTIAL : CT_TOKEN_ORDER_RANDOM;
    }
    if (g.betas && !parse_betas(g.betas, c)) return CT_EXIT_USAGE;
    if (o->val_data && g.val_fraction) {
        fprintf(stderr, "ctorch " COMMAND ": --val-data validates on its own file; leave out --val-fraction\n");
        return CT_EXIT_USAGE;
    }
    double fraction = 0.1;
    if (g.val_fraction) {
        char *end;
        fraction = strtod(g.val_fraction, &end);
        if (*end || !(fraction >= 0 && fraction < 1)) {
            fprintf(stderr, "ctorch " COMMAND ": --val-fraction '%s' is not a fraction from 0 to below 1\n",
                    g.val_fraction);
            return CT_EXIT_USAGE;
        }
    }
    c->val_fraction = o->val_data ? 0 : fraction;
    const char *files[4][2] = {{"--resume", o->resume}, {"--data", o->data}, {"--init", o->init},
                               {"--val-data", o->val_data}};
    for (int i = 0; i < 4; i++)
        if (files[i][1] && !ct_arg_readable_file(COMMAND, files[i][0], files[i][1])) return CT_EXIT_USAGE;
    if (o->save && job->rank == 0 && ct_save_check_path(o->save) != CT_OK) {
        fprintf(stderr, "ctorch " COMMAND ": --save: %s\n", ct_last_error_message());
        return CT_EXIT_USAGE;
    }
    if (o->data_parallel && job->distributed) {
        fprintf(stderr, "ctorch " COMMAND ": --data-parallel drives several devices from one process, but the "
                "launcher started %d processes; give one or the other\n", job->world_size);
        return CT_EXIT_USAGE;
    }
    if (job->distributed) return 0;
    if (o->data_parallel) {
        if (!ct_tool_choose_data_parallel(COMMAND, o->data_parallel, o->device, c->data_parallel,
                                          CT_TRAIN_MAX_DEVICES, &c->data_parallel_count))
            return CT_EXIT_USAGE;
        c->device = c->data_parallel[0];
        return 0;
    }
    return ct_tool_choose_device(COMMAND, job, o->device, &c->device) ? 0 : CT_EXIT_USAGE;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- what the run prints ---- */
typedef struct progress {
    const gpt_options *o;
    const ct_gpt_train_config *config;
    double flops_per_token, peak; /* peak 0: no MFU */
    int64_t every;
} progress;

/* Dense bf16 tensor-core peaks, as nanoGPT's estimate_mfu (its 312e12 for an A100);
 * CTORCH_PEAK_FLOPS overrides. 0 when unknown (no MFU printed). */
static double peak_flops(ct_device device)
{
    const char *env = getenv("CTORCH_PEAK_FLOPS");
    if (env && atof(env) > 0) return atof(env);
    ct_device_props props;
    if (ct_get_device_properties(device, &props) != CT_OK || !props.is_gpu) return 0;
    if (strstr(props.name, "H100") || strstr(props.name, "H200") || strstr(props.name, "H800")) return 989e12;
    if (strstr(props.name, "A100") || strstr(props.name, "A800")) return 312e12;
    if (strstr(props.name, "L40")) return 181e12;
    return 0;
}

static void print_step(void *context, const ct_gpt_step *s)
{
    const progress *p = context;
    if (p->o->json) {
        cJSON *line = ct_json_object();
        ct_json_add_number(line, "step", (double)s->step);
        ct_json_add_number(line, "loss", s->loss);
        ct_json_add_number(line, "lr", s->lr);
        ct_json_add_number(line, "tokens_per_second", s->tokens_per_second);
        if (!isnan(s->val_loss)) ct_json_add_number(line, "val_loss", s->val_loss);
        ct_json_print_line(stdout, line);
        fflush(stdout);
        return;
    }
    bool last = s->step + 1 == s->steps;
    if (s->step % p->every != 0 && !last && isnan(s->val_loss)) return;
    char mfu[48] = "", val[48] = "";
    if (p->peak > 0)
        snprintf(mfu, sizeof mfu, "  MFU %.1f%%", 100 * p->flops_per_token * s->tokens_per_second / p->peak);
    if (!isnan(s->val_loss)) snprintf(val, sizeof val, "  val loss %.4f", s->val_loss);
    printf("step %5lld/%lld  loss %.4f  lr %.2e  %8.0f tokens/s%s  %.0f ms%s\n", (long long)s->step + 1,
           (long long)s->steps, s->loss, s->lr, s->tokens_per_second, mfu, 1000 * s->seconds, val);
    fflush(stdout);
}

static ct_status save_state(void *context, const ct_module *model, const ct_gpt_train_state *state)
{
    const progress *p = context;
    return ct_train_gpt_save(model, p->config, state, p->o->save);
}

/* A short sample from a newline, printed as text (byte-level models only). */
static void print_sample(ct_module *model, const gpt_options *o)
{
    int64_t n = o->sample_tokens, prompt = '\n';
    int64_t *out = malloc((size_t)(n + 1) * sizeof *out);
    if (!out) return;
    ct_module_eval(model);
    if (ct_gpt_generate(model, &prompt, 1, n, 0.8, 200, o->config.seed, out) == CT_OK) {
        printf("Sample:\n");
        for (int64_t i = 1; i <= n; i++) putchar((int)out[i]);
        printf("\n");
    } else {
        fprintf(stderr, "ctorch " COMMAND ": the sample: %s\n", ct_last_error_message());
    }
    free(out);
}

static int fail(const ct_tool_job *job, int status, ct_module *model, ct_gpt_tokens *tokens)
{
    int code = ct_tool_job_fail(COMMAND, job, status, ct_train_error_message());
    ct_module_release(model);
    ct_gpt_tokens_free(tokens);
    return code;
}

static int train(gpt_options *o, const ct_tool_job *job, double start)
{
    ct_gpt_train_config *c = &o->config;
    ct_module *model = NULL;
    ct_gpt_tokens tokens = {0};
    const char *path = o->data ? o->data : ct_gpt_default_text_path();
    if (!path) return fail(job, CT_EXIT_FAILURE, NULL, NULL);
    if (o->init) {
        if (ct_train_gpt_load(o->init, o->map_location, &model) != CT_OK)
            return fail(job, CT_EXIT_USAGE, NULL, NULL);
        ct_gpt_config_of(model, &c->model);
        if (c->seq_len > c->model.block_size && c->seq_len == ct_gpt_train_config_default().seq_len)
            c->seq_len = c->model.block_size;
    } else if (ct_gpt_is_token_file(path)) {
        c->model.vocab_size = CT_GPT2_VOCAB;
        c->model.padded_vocab_size = CT_GPT2_PADDED_VOCAB;
    }
    /* the options first (the message names them), then the data against them */
    if (ct_gpt_train_check(c, NULL) != CT_OK ||
        ct_gpt_tokens_load(path, c->model.vocab_size, c->val_fraction, &tokens) != CT_OK ||
        (o->val_data && ct_gpt_tokens_load_val(o->val_data, c->model.vocab_size, &tokens) != CT_OK) ||
        ct_gpt_train_check(c, &tokens) != CT_OK)
        return fail(job, CT_EXIT_USAGE, model, &tokens);
    if (!model) {
        ct_manual_seed(c->seed);
        model = ct_gpt(&c->model);
        if (!model) {
            ct_train_fail_library("the model");
            return fail(job, CT_EXIT_USAGE, NULL, &tokens);
        }
    }
    ct_gpt_train_state resumed = {0};
    if (o->resume) {
        ct_status status = ct_train_gpt_resume(o->resume, c, model, &resumed);
        if (status != CT_OK) return fail(job, status == CT_ERR_INVALID_ARGUMENT ? CT_EXIT_USAGE : CT_EXIT_FAILURE,
                                         model, &tokens);
        c->resume = &resumed;
    }
    bool speaks = job->rank == 0;
    int64_t parameters = ct_module_num_parameters(model);
    if (!o->json) {
        if (job->distributed) ct_tool_job_print_using(stdout, job, c->device);
        else if (c->data_parallel_count > 0) ct_tool_print_using_data_parallel(stdout, c->data_parallel, c->data_parallel_count);
        else ct_tool_print_using(stdout, c->device);
    }
    if (speaks && !o->json) {
        printf("Training a GPT (%lld layers, %lld heads, %lld channels, vocabulary %lld: %.2fM parameters) on %s: "
               "%lld tokens, %lld held out; %lld steps of %lld x %lld x %lld tokens%s, AdamW lr %g, betas %g/%g, weight decay %g",
               (long long)c->model.n_layer, (long long)c->model.n_head, (long long)c->model.n_embd,
               (long long)c->model.vocab_size, (double)parameters / 1e6, path, (long long)ct_token_data_size(tokens.train),
               (long long)(tokens.val ? ct_token_data_size(tokens.val) : 0), (long long)c->steps, (long long)c->grad_accum,
               (long long)c->batch_size, (long long)c->seq_len, job->distributed ? " per process" : "", c->lr,
               c->beta1, c->beta2, c->weight_decay);
        if (c->schedule) printf(", warm-up %lld then cosine to %g x", (long long)c->warmup, c->min_lr_factor);
        if (c->clip_grad > 0) printf(", clip %g", c->clip_grad);
        if (c->amp != CT_F32) printf(", autocast %s", ct_dtype_name(c->amp));
        printf(", seed %llu\n", (unsigned long long)c->seed);
        if (o->val_data) printf("Validating on %s\n", o->val_data);
        if (o->resume) printf("Resuming %s after step %lld\n", o->resume, (long long)resumed.step);
        fflush(stdout);
    }
    progress p = {.o = o, .config = c, .flops_per_token = ct_gpt_flops_per_token(&c->model, parameters, c->seq_len),
                  .peak = peak_flops(c->device), .every = c->steps >= 20 ? c->steps / 20 : 1};
    ct_gpt_observer observer = {.on_step = speaks ? print_step : NULL,
                                .on_state = o->save && speaks ? save_state : NULL, .context = &p};
    ct_gpt_train_result result;
    if (ct_gpt_train_run(model, &tokens, c, &observer, &result) != CT_OK) {
        ct_gpt_train_state_free(&resumed);
        return fail(job, CT_EXIT_FAILURE, model, &tokens);
    }
    ct_gpt_train_state_free(&resumed);
    double seconds = now_seconds() - start;
    if (speaks && o->json) {
        char name[CT_DEVICE_STRING_MAX];
        cJSON *line = ct_json_object();
        ct_json_add_string(line, "device", ct_device_format(c->device, name, sizeof name));
        ct_json_add_string(line, "model", "gpt");
        ct_json_add_number(line, "steps", (double)c->steps);
        ct_json_add_number(line, "final_loss", result.final_loss);
        ct_json_add_number(line, "val_loss", result.val_loss);
        ct_json_add_number(line, "seconds", seconds);
        ct_json_add_number(line, "tokens_per_second", result.tokens_per_second);
        ct_json_add_number(line, "parameters", (double)parameters);
        ct_json_add_number(line, "world_size", job->world_size);
        ct_json_print_line(stdout, line);
    } else if (speaks) {
        printf("Validation loss: %.4f\n", result.val_loss);
        if (o->save) printf("Saved the model to %s (ctorch generate --checkpoint %s)\n", o->save, o->save);
        printf("Time: %.1f s (training %.1f s, %.0f tokens/s)\n", seconds, result.train_seconds,
               result.tokens_per_second);
        int64_t sample = o->sample_tokens >= 0 ? o->sample_tokens : (tokens.is_text ? 200 : 0);
        if (sample > 0 && c->model.vocab_size == CT_GPT_TEXT_VOCAB) {
            o->sample_tokens = sample;
            print_sample(model, o);
        }
    }
    fflush(stdout);
    ct_module_release(model);
    ct_gpt_tokens_free(&tokens);
    return 0;
}

int ct_cmd_train_gpt(int argc, char **argv)
{
    double start = now_seconds();
    ct_tool_job job;
    if (!ct_tool_job_start(COMMAND, &job)) return CT_EXIT_FAILURE;
    gpt_options o = {0};
    ct_tool_job_quiet_begin(&job);
    int status = parse(argc, argv, &job, &o);
    ct_tool_job_quiet_end(&job);
    if (status == 0 && !o.help && job.distributed && !ct_tool_choose_device(COMMAND, &job, o.device, &o.config.device))
        status = CT_EXIT_USAGE;
    o.config.distributed = job.distributed;
    status = ct_tool_job_agree(&job, status);
    if (status != 0 || o.help) return ct_tool_job_end(&job, status);
    if (o.tf32 && ct_set_float32_matmul_precision("high") != CT_OK) return ct_tool_job_end(&job, CT_EXIT_FAILURE);
    return ct_tool_job_end(&job, train(&o, &job, start));
}
