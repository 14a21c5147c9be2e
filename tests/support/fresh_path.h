/* A path for a checkpoint that a test (or the command it runs) is about to save. */
#ifndef CT_TEST_FRESH_PATH_H
#define CT_TEST_FRESH_PATH_H

#include <stddef.h>

/* "/tmp/<stem>XXXXXX.safetensors", made unique by mkstemps, then removed: the path names no file,
 * so that a save which fails to write shows. Fails the test when no name can be made. */
void ct_test_fresh_checkpoint_path(char *path, size_t size, const char *stem);

#endif
