/* `ctorch` under the limits a shell puts on a process. Under `ulimit -f` (the file size) a --save
 * that the limit cannot hold fails with status 1 and a message naming the limit, with no temporary
 * file left: it used to die of SIGXFSZ (status 153, no word). Under `ulimit -v` of 150 to 250 MB
 * every command ends: `--version`, `info`, `train` and `eval` end with status 0, or 1 and an
 * out-of-memory message; they used to hang at exit in OpenBLAS's worker threads, which retry
 * their buffer for ever. So under `ulimit -d` of 50 to 150 MB, where PoCL aborted (status 134). `timeout` turns a hang into status 124. */
#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#include "support/run_command.h"
#include "test_common.h"

static void a_save_past_the_file_size_limit_fails_with_a_message(void **state)
{
    (void)state;
    char folder[] = "/tmp/ctorch_fsize_XXXXXX", command[1024];
    assert_non_null(mkdtemp(folder));
    /* 16 blocks of 512 bytes: the mlp's checkpoint (about 230 kB) does not fit */
    snprintf(command, sizeof command,
             "timeout 120 sh -c 'ulimit -f 16 && exec \"$0\" train --device cpu --epochs 1 --save \"$1\"/m.st' "
             "'%s' '%s' 2>&1", CTORCH_TOOL_PATH, folder);
    int status;
    char *out = ct_test_run_command(command, &status);
    if (status != 1) fail_msg("ctorch train --save under ulimit -f 16: status %d, want 1: %s", status, out);
    if (!strstr(out, "file size limit (ulimit -f, RLIMIT_FSIZE) is 8192") || !strstr(out, "File too large"))
        fail_msg("ctorch train --save under ulimit -f 16: the message does not name the limit: %s", out);
    free(out);
    DIR *d = opendir(folder);
    int left = 0;
    for (struct dirent *e; (e = readdir(d));) left += e->d_name[0] != '.';
    closedir(d);
    if (left) fail_msg("%d file(s) left in %s", left, folder);
    rmdir(folder);
}

/* Every command under limits of 150 to 250 MB: it ends (no hang, no abort), with status 0 or with
 * status 1 and an out-of-memory message. */
static void every_command_ends_under_a_tight_address_space_limit(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip(); /* AddressSanitizer's shadow memory takes terabytes of address space */
#endif
    char checkpoint[] = "/tmp/ctorch_limits_XXXXXX.safetensors", command[1024];
    int fd = mkstemps(checkpoint, 12);
    assert_true(fd >= 0);
    close(fd);
    snprintf(command, sizeof command, "'%s' train --device cpu --epochs 1 --save '%s' 2>&1", CTORCH_TOOL_PATH,
             checkpoint);
    int status;
    free(ct_test_run_command(command, &status));
    assert_int_equal(status, 0);
    /* ulimit -v (the address space), then ulimit -d (the data segment: PoCL aborted below 128 MiB) */
    const struct {
        char option;
        int kb;
    } limits[] = {{'v', 150000}, {'v', 200000}, {'v', 250000}, {'d', 50000}, {'d', 100000}, {'d', 150000}};
    char eval[512];
    snprintf(eval, sizeof eval, "eval --device cpu --checkpoint %s", checkpoint);
    const char *commands[] = {"--version", "info", "train --device cpu --epochs 1",
                              "train --device cpu --model cnn --epochs 1", "train --epochs 1", eval};
    for (size_t l = 0; l < sizeof limits / sizeof *limits; l++) {
        for (size_t c = 0; c < sizeof commands / sizeof *commands; c++) {
            /* scripts/gpu-check --standin runs this with the stand-in CUDA driver, the default device */
            snprintf(command, sizeof command, "timeout 60 sh -c 'ulimit -%c %d && exec \"$0\" %s' '%s' 2>&1",
                     limits[l].option, limits[l].kb, commands[c], CTORCH_TOOL_PATH);
            char *out = ct_test_run_command(command, &status);
            bool ended = status == 0 || (status == 1 && strstr(out, "out of memory"));
            if (!ended)
                fail_msg("ctorch %s under ulimit -%c %d: status %d (124: hung; 134: aborted), want 0, or 1 with "
                         "an out-of-memory message: %s", commands[c], limits[l].option, limits[l].kb, status, out);
            free(out);
        }
    }
    unlink(checkpoint);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_command_ends_under_a_tight_address_space_limit),
        cmocka_unit_test(a_save_past_the_file_size_limit_fails_with_a_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
