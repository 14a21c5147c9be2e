/* ctorch convert IN OUT: a GPT checkpoint from any of llm.c's .bin, nanoGPT's and Hugging Face's
 * safetensors into another, so that a model moves between ctorch, llm.c and PyTorch. */
#include <stdio.h>
#include <string.h>

#include "tool.h"

static const char *COMMAND = "convert";

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ctorch convert IN OUT [--format nanogpt|hf|llmc] [--from nanogpt|hf|llmc] [--heads H]\n\n"
            "Converts a GPT checkpoint between llm.c's .bin (gpt2_124M.bin, train_gpt2.c's), nanoGPT's\n"
            "safetensors (GPT.state_dict()'s names, the config in __metadata__; what ctorch train --save\n"
            "writes) and Hugging Face's GPT-2 model.safetensors.\n\n"
            "  IN              its format is read from its contents (--from to say it)\n"
            "  OUT             .bin is written as llm.c's, .safetensors as nanoGPT's (--format to say it)\n"
            "  --format F      OUT's format: nanogpt, hf or llmc\n"
            "  --from F        IN's format: nanogpt, hf or llmc\n"
            "  --heads H       the number of heads, for a file that does not say it (a Hugging Face\n"
            "                  model.safetensors without its config.json beside it)\n");
}

static bool parse_format(const char *option, const char *text, ct_gpt_format *out)
{
    if (ct_gpt_format_parse(text, out) == CT_OK && *out != CT_GPT_FORMAT_AUTO) return true;
    fprintf(stderr, "ctorch %s: %s '%s' is not a format; give nanogpt, hf or llmc\n", COMMAND, option, text);
    return false;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

int ct_cmd_convert(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL}, *value = NULL;
    int count = 0;
    ct_gpt_format to = CT_GPT_FORMAT_AUTO;
    ct_gpt_load_options options = ct_gpt_load_options_default();
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (ct_arg_option(COMMAND, argc, argv, &i, "--format", &value)) {
            if (!value || !parse_format("--format", value, &to)) return CT_EXIT_USAGE;
        } else if (ct_arg_option(COMMAND, argc, argv, &i, "--from", &value)) {
            if (!value || !parse_format("--from", value, &options.format)) return CT_EXIT_USAGE;
        } else if (ct_arg_option(COMMAND, argc, argv, &i, "--heads", &value)) {
            long long heads = 0;
            if (!value || !ct_arg_int(COMMAND, "--heads", value, 1, 1 << 20, &heads)) return CT_EXIT_USAGE;
            options.n_head = heads;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            static const char *const options[] = {"--format", "--from", "--heads", "--help", NULL};
            ct_option_unknown(COMMAND, "", argv[i], options, "ctorch convert --help");
            return CT_EXIT_USAGE;
        } else if (count < 2) {
            paths[count++] = argv[i];
        } else {
            fprintf(stderr, "ctorch %s: takes IN and OUT, not also '%s'\n", COMMAND, argv[i]);
            return CT_EXIT_USAGE;
        }
    }
    if (count < 2) {
        fprintf(stderr, "ctorch %s: give IN and OUT\n", COMMAND);
        usage(stderr);
        return CT_EXIT_USAGE;
    }
    if (to == CT_GPT_FORMAT_AUTO) {
        if (ends_with(paths[1], ".bin")) to = CT_GPT_FORMAT_LLMC;
        else if (ends_with(paths[1], ".safetensors")) to = CT_GPT_FORMAT_NANOGPT;
        else {
            fprintf(stderr, "ctorch %s: '%s' ends in neither .bin (llm.c) nor .safetensors (nanoGPT); give "
                    "--format nanogpt, hf or llmc\n", COMMAND, paths[1]);
            return CT_EXIT_USAGE;
        }
    }
    if (!ct_arg_readable_file(COMMAND, "IN", paths[0])) return CT_EXIT_USAGE;
    if (ct_save_check_path(paths[1]) != CT_OK) {
        fprintf(stderr, "ctorch %s: %s\n", COMMAND, ct_last_error_message());
        return CT_EXIT_USAGE;
    }
    ct_gpt_format from = options.format;
    if (from == CT_GPT_FORMAT_AUTO && ct_gpt_checkpoint_format(paths[0], &from) != CT_OK) {
        fprintf(stderr, "ctorch %s: %s\n", COMMAND, ct_last_error_message());
        return CT_EXIT_FAILURE;
    }
    options.format = from;
    options.map_location = "cpu";
    ct_gpt_config config;
    ct_state_dict *sd = ct_gpt_checkpoint_load(paths[0], &options, &config);
    if (!sd || ct_gpt_checkpoint_save(sd, &config, paths[1], to) != CT_OK) {
        fprintf(stderr, "ctorch %s: %s\n", COMMAND, ct_last_error_message());
        ct_state_dict_free(sd);
        return CT_EXIT_FAILURE;
    }
    ct_state_dict_free(sd);
    printf("ctorch %s: %s (%s) -> %s (%s): GPT of %lld layers, %lld heads, %lld channels, vocabulary %lld "
           "(padded %lld), block %lld%s\n", COMMAND, paths[0], ct_gpt_format_name(from), paths[1],
           ct_gpt_format_name(to), (long long)config.n_layer, (long long)config.n_head, (long long)config.n_embd,
           (long long)config.vocab_size, (long long)config.padded_vocab_size, (long long)config.block_size,
           config.bias ? "" : ", no biases");
    return 0;
}
