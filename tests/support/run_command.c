/* A shell command's output and exit status (run_command.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "support/run_command.h"

char *ct_test_run_command(const char *command, int *exit_status)
{
    FILE *pipe = popen(command, "r");
    if (!pipe) fail_msg("popen %s failed", command);
    size_t capacity = 1 << 16, used = 0, n;
    char *out = malloc(capacity);
    assert_non_null(out);
    while ((n = fread(out + used, 1, capacity - used - 1, pipe)) > 0) {
        used += n;
        if (used + 1 == capacity) {
            capacity *= 2;
            out = realloc(out, capacity);
            assert_non_null(out);
        }
    }
    out[used] = '\0';
    int status = pclose(pipe);
    *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}
