/* `ctorch train` under a limit on its address space (`ulimit -v 300000`) with a data set of 20000
 * features fails with status 1 and an out-of-memory message; it used to hang in OpenBLAS's
 * blas_memory_alloc under cblas_sgemm, which retries a failed mapping forever. `timeout` turns a
 * hang into status 124 (and ctest's TIMEOUT backs it). The limit leaves room for the libraries
 * and the data set but not for OpenBLAS's 128 MiB work buffer, which a small product of the run
 * still needs. (Under so tight a limit OpenBLAS starts no threads of its own, and their buffers no
 * longer take the room: 360000 now trains.) */
#include <stdio.h>
#include <unistd.h>

#include "support/run_command.h"
#include "test_common.h"

enum { ROWS = 32, FEATURES = 20000 };

/* A CSV of ROWS samples of FEATURES pixel values (0-16) and a label; its path in path. */
static void write_wide_data_set(char *path, size_t size)
{
    snprintf(path, size, "/tmp/ctorch_wide_XXXXXX.csv");
    int fd = mkstemps(path, 4);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < FEATURES; c++) fprintf(f, "%d,", (r * 7 + c * 13) % 17);
        fprintf(f, "%d\n", r % 10);
    }
    assert_int_equal(fclose(f), 0);
}

static void training_without_room_for_openblas_fails_with_a_message(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip(); /* AddressSanitizer's shadow memory takes terabytes of address space */
#endif
    char data[64], command[512];
    write_wide_data_set(data, sizeof data);
    snprintf(command, sizeof command,
             "timeout 120 sh -c 'ulimit -v 300000 && exec \"$0\" train --device cpu --epochs 1 --data \"$1\"' "
             "'%s' '%s' 2>&1", CTORCH_TOOL_PATH, data);
    int status;
    char *out = ct_test_run_command(command, &status);
    unlink(data);
    if (status == 124) fail_msg("ctorch train hung under ulimit -v 300000: %s", out);
    if (status != 1 || !strstr(out, "out of memory"))
        fail_msg("ctorch train under ulimit -v 300000: status %d, want 1 with an out-of-memory message: %s",
                 status, out);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(training_without_room_for_openblas_fails_with_a_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
