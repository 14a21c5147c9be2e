/* `ctorch` under the limits a shell puts on a process. Under `ulimit -f` (the file size) a --save
 * that the limit cannot hold fails with status 1 and a message naming the limit, with no temporary
 * file left: it used to die of SIGXFSZ (status 153, no word). Under `ulimit -v` of 150 to 250 MB
 * every command ends: `--version`, `info`, `train` and `eval` end with status 0, or 1 and an
 * out-of-memory message; they used to hang at exit in OpenBLAS's worker threads, which retry
 * their buffer for ever. `timeout` turns a hang into status 124. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_save_past_the_file_size_limit_fails_with_a_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
