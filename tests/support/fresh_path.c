/* A unique path for a checkpoint, with no file there yet (fresh_path.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "support/fresh_path.h"

void ct_test_fresh_checkpoint_path(char *path, size_t size, const char *stem)
{
    static const char suffix[] = ".safetensors";
    int length = snprintf(path, size, "/tmp/%sXXXXXX%s", stem, suffix);
    if (length < 0 || (size_t)length >= size) fail_msg("a checkpoint path for '%s' does not fit in %zu bytes", stem, size);
    int fd = mkstemps(path, (int)sizeof suffix - 1);
    if (fd < 0) fail_msg("mkstemps %s failed", path);
    close(fd);
    unlink(path);
}
