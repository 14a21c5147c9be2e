/* ctorch: the command. `ctorch info`, `ctorch bench`, `ctorch train`, `ctorch eval`. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ctorch.h"
#include "tool.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: ctorch <command> [options]\n\n"
                 "commands:\n"
                 "  train [options]          train a model on the digits data set (train --help)\n"
                 "  eval --checkpoint FILE   test a model saved by train --save (eval --help)\n"
                 "  generate --checkpoint FILE  sample from a GPT of train --model gpt (generate --help)\n"
                 "  convert IN OUT           a GPT checkpoint between llm.c's .bin, nanoGPT's and Hugging\n"
                 "                           Face's safetensors (convert --help)\n"
                 "  info [--json]            backends, devices, memory, the best device\n"
                 "  bench [--json] [FILTER]  benchmarks against the libraries underneath (bench --help)\n"
                 "  version, --version       the library version\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    /* Past the file size limit (ulimit -f) a write fails with EFBIG, which ct_save reports (and
     * removes its temporary file), instead of SIGXFSZ ending the command without a word. */
    signal(SIGXFSZ, SIG_IGN);
    const char *command = argv[1];
    if (strcmp(command, "info") == 0) return ct_cmd_info(argc - 2, argv + 2);
    /* OpenMP's threads wait passively here as in every program that loads libctorch
     * (src/startup/before_libraries.c): no restart with OMP_WAIT_POLICY set is needed. */
    if (strcmp(command, "train") == 0) return ct_cmd_train(argc - 2, argv + 2);
    if (strcmp(command, "eval") == 0) return ct_cmd_eval(argc - 2, argv + 2);
    if (strcmp(command, "generate") == 0) return ct_cmd_generate(argc - 2, argv + 2);
    if (strcmp(command, "convert") == 0) return ct_cmd_convert(argc - 2, argv + 2);
    if (strcmp(command, "bench") == 0) return ct_cmd_bench(argc - 2, argv + 2);
    if (strcmp(command, "version") == 0 || strcmp(command, "--version") == 0) {
        if (argc > 2) {
            fprintf(stderr, "ctorch %s: takes no arguments, not '%s'\n", command, argv[2]);
            return 2;
        }
        printf("ctorch %s\n", CT_VERSION_STRING);
        return 0;
    }
    if (strcmp(command, "help") == 0 || strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "ctorch: unknown command '%s'\n", command);
    usage(stderr);
    return 2;
}
