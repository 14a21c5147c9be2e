/* ctorch generate: samples from a GPT checkpoint with its KV cache (ct_gpt_generate: each new
 * token costs one position). A byte-level model (vocabulary 256) takes --prompt as text and prints
 * text; any model takes --prompt-tokens 1,2,3 and prints ids with --print-tokens. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "train_gpt.h"

#define COMMAND "generate"

static void usage(FILE *out)
{
    fprintf(out, "usage: ctorch generate --checkpoint FILE [options]\n\n"
                 "  --checkpoint FILE         a GPT saved by ctorch train --model gpt --save\n"
                 "  --prompt TEXT             the start, as bytes (byte-level models; default a newline)\n"
                 "  --prompt-tokens 1,2,3     the start as token ids (any vocabulary)\n"
                 "  --max-new-tokens N        tokens to add (default 200)\n"
                 "  --temperature X           divides the logits (default 0.8)\n"
                 "  --top-k K                 draw among the K likeliest (default 200; 0: all)\n"
                 "  --seed S                  the draws (default 1337)\n"
                 "  --device D                cpu, opencl:N, cuda:N (default: the best device here)\n"
                 "  --map-location M          where the checkpoint's tensors load\n"
                 "  --print-tokens            print the ids, comma-separated, instead of text\n");
}

/* "1,2,3" into a new array; false after printing what is wrong. */
static bool parse_tokens(const char *text, int64_t **out, int64_t *count)
{
    int64_t n = 1;
    for (const char *p = text; *p; p++) n += *p == ',';
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) return false;
    const char *p = text;
    for (int64_t i = 0; i < n; i++) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || (*end != ',' && *end != '\0')) {
            fprintf(stderr, "ctorch " COMMAND ": --prompt-tokens '%s' is not a list of ids from 0, as 1,2,3\n", text);
            free(ids);
            return false;
        }
        ids[i] = v;
        p = end + 1;
    }
    *out = ids;
    *count = n;
    return true;
}

int ct_cmd_generate(int argc, char **argv)
{
    const char *checkpoint = NULL, *prompt = NULL, *prompt_tokens = NULL, *device_text = NULL, *map = NULL;
    const char *max_new = NULL, *temperature_text = NULL, *top_k_text = NULL, *seed_text = NULL;
    bool print_tokens = false;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--print-tokens") == 0) {
            print_tokens = true;
            continue;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (ct_arg_option(COMMAND, argc, argv, &i, "--checkpoint", &v)) checkpoint = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--prompt-tokens", &v)) prompt_tokens = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--prompt", &v)) prompt = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--max-new-tokens", &v)) max_new = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--temperature", &v)) temperature_text = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--top-k", &v)) top_k_text = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--seed", &v)) seed_text = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--device", &v)) device_text = v;
        else if (ct_arg_option(COMMAND, argc, argv, &i, "--map-location", &v)) map = v;
        else {
            static const char *const options[] = {
                "--checkpoint", "--prompt", "--prompt-tokens", "--max-new-tokens", "--temperature", "--top-k",
                "--seed", "--device", "--map-location", "--print-tokens", "--help", NULL};
            ct_option_unknown(COMMAND, "", argv[i], options, "ctorch generate --help");
            return CT_EXIT_USAGE;
        }
        if (!v) return CT_EXIT_USAGE;
    }
    if (!checkpoint) {
        fprintf(stderr, "ctorch " COMMAND ": --checkpoint FILE is needed (a GPT saved by ctorch train --model gpt "
                "--save)\n");
        return CT_EXIT_USAGE;
    }
    if (prompt && prompt_tokens) {
        fprintf(stderr, "ctorch " COMMAND ": give --prompt or --prompt-tokens, not both\n");
        return CT_EXIT_USAGE;
    }
    long long max_new_tokens = 200, top_k = 200;
    double temperature = 0.8;
    uint64_t seed = 1337;
    if ((max_new && !ct_arg_int(COMMAND, "--max-new-tokens", max_new, 0, 1 << 24, &max_new_tokens)) ||
        (top_k_text && !ct_arg_int(COMMAND, "--top-k", top_k_text, 0, 1 << 30, &top_k)) ||
        (temperature_text && !ct_arg_double(COMMAND, "--temperature", temperature_text, 0, 1e6, &temperature)) ||
        (seed_text && !ct_arg_uint64(COMMAND, "--seed", seed_text, &seed)) ||
        !ct_arg_readable_file(COMMAND, "--checkpoint", checkpoint))
        return CT_EXIT_USAGE;
    ct_device device;
    if (!ct_tool_choose_device(COMMAND, NULL, device_text, &device)) return CT_EXIT_USAGE;

    ct_module *model = NULL;
    if (ct_train_gpt_load(checkpoint, map, &model) != CT_OK) {
        fprintf(stderr, "ctorch " COMMAND ": %s\n", ct_train_error_message());
        return CT_EXIT_USAGE;
    }
    ct_gpt_config config;
    ct_gpt_config_of(model, &config);
    int64_t *ids = NULL, count = 0;
    int status = 0;
    if (prompt_tokens) {
        if (!parse_tokens(prompt_tokens, &ids, &count)) status = CT_EXIT_USAGE;
    } else if (config.vocab_size != CT_GPT_TEXT_VOCAB && prompt) {
        fprintf(stderr, "ctorch " COMMAND ": the model's vocabulary is %lld tokens, not bytes: give the prompt as "
                "--prompt-tokens (ctorch has no tokenizer)\n", (long long)config.vocab_size);
        status = CT_EXIT_USAGE;
    } else {
        const char *text = prompt ? prompt : "\n";
        count = (int64_t)strlen(text);
        ids = malloc((size_t)(count > 0 ? count : 1) * sizeof *ids);
        for (int64_t i = 0; ids && i < count; i++) ids[i] = (unsigned char)text[i];
        if (!prompt && config.vocab_size != CT_GPT_TEXT_VOCAB) ids[0] = 0; /* a start id for other vocabularies */
    }
    for (int64_t i = 0; status == 0 && i < count; i++)
        if (ids[i] >= config.vocab_size) {
            fprintf(stderr, "ctorch " COMMAND ": prompt token %lld is id %lld, but the model's vocabulary is %lld "
                    "ids (0 to %lld)\n", (long long)i, (long long)ids[i], (long long)config.vocab_size,
                    (long long)config.vocab_size - 1);
            status = CT_EXIT_USAGE;
        }
    if (status == 0 && (count < 1 || count > config.block_size)) {
        fprintf(stderr, "ctorch " COMMAND ": the prompt is %lld tokens; the model takes 1 to %lld (its block size)\n",
                (long long)count, (long long)config.block_size);
        status = CT_EXIT_USAGE;
    }
    int64_t *out = status == 0 ? malloc((size_t)(count + max_new_tokens) * sizeof *out) : NULL;
    if (status == 0 && (!out || ct_module_to(model, device) != CT_OK)) status = CT_EXIT_FAILURE;
    if (status == 0) {
        ct_module_eval(model);
        if (ct_gpt_generate(model, ids, count, max_new_tokens, temperature, top_k, seed, out) != CT_OK) {
            fprintf(stderr, "ctorch " COMMAND ": %s\n", ct_last_error_message());
            status = CT_EXIT_FAILURE;
        }
    }
    if (status == 0 && (print_tokens || config.vocab_size != CT_GPT_TEXT_VOCAB)) {
        for (int64_t i = 0; i < count + max_new_tokens; i++) printf("%s%lld", i ? "," : "", (long long)out[i]);
        printf("\n");
    } else if (status == 0) {
        for (int64_t i = 0; i < count + max_new_tokens; i++) putchar((int)out[i]);
        printf("\n");
    }
    fflush(stdout);
    free(out);
    free(ids);
    ct_module_release(model);
    return status;
}
