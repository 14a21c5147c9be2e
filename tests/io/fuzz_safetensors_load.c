/* libFuzzer harness for the checkpoint loader: each input is a file for ct_load, which must load
 * it or fail with a recorded error, and never crash, read out of bounds or leak.
 *
 * Built with -fsanitize=fuzzer where the compiler has it (scripts/fuzz-checkpoint-loader);
 * otherwise with CT_FUZZ_STANDALONE, a main that runs every file (or folder of files) named on
 * the command line once, which is how ctest replays the seed corpus in tests/io/corpus/. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctorch.h"

static int input_fd = -1;
static char input_path[64];

/* The input lives in an in-memory file, opened by ct_load through /proc/self/fd like any path. */
static int open_input(void)
{
    if (input_fd >= 0) return 0;
    input_fd = memfd_create("ctorch-fuzz-input", MFD_CLOEXEC);
    if (input_fd < 0) return -1;
    snprintf(input_path, sizeof input_path, "/proc/self/fd/%d", input_fd);
    return 0;
}

static void check_loaded(ct_state_dict *sd)
{
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++) {
        ct_tensor *t = ct_state_dict_tensor_at(sd, i);
        size_t bytes = (size_t)ct_numel(t) * ct_dtype_size(ct_tensor_dtype(t));
        void *host = malloc(bytes ? bytes : 1);
        if (!t || !host || ct_tensor_to_array(t, host, bytes) != CT_OK || !ct_state_dict_name_at(sd, i)) abort();
        free(host);
        ct_release(t);
    }
    for (int64_t k = 0; k < ct_state_dict_metadata_count(sd); k++)
        if (!ct_state_dict_metadata_key_at(sd, k) || !ct_state_dict_metadata_value_at(sd, k)) abort();
}

static void load_once(const char *map)
{
    ct_clear_error();
    ct_state_dict *sd = ct_load(input_path, map);
    if (sd) check_loaded(sd);
    else if (ct_last_error() == CT_OK || ct_last_error_message()[0] == '\0') abort(); /* a failure says why */
    ct_state_dict_free(sd);
    ct_clear_error();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (open_input() != 0 || ftruncate(input_fd, 0) != 0) abort();
    if (size > 0 && pwrite(input_fd, data, size, 0) != (ssize_t)size) abort();
    load_once(NULL);
    load_once("cpu");
    load_once("cuda:0=cpu,opencl:0=cpu,opencl:1=cpu");
    return 0;
}

#ifdef CT_FUZZ_STANDALONE
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_safetensors_load: cannot open %s\n", path);
        return 1;
    }
    size_t capacity = 4096, size = 0;
    unsigned char *data = malloc(capacity);
    for (size_t n; data && (n = fread(data + size, 1, capacity - size, f)) > 0;) {
        size += n;
        if (size == capacity) data = realloc(data, capacity *= 2);
    }
    fclose(f);
    if (!data) return 1;
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    int failures = 0, count = 0;
    for (int a = 1; a < argc; a++) {
        struct stat info;
        if (argv[a][0] == '-') continue; /* libFuzzer's flags mean nothing here */
        if (stat(argv[a], &info) == 0 && S_ISDIR(info.st_mode)) {
            DIR *dir = opendir(argv[a]);
            for (struct dirent *e; dir && (e = readdir(dir));) {
                if (e->d_name[0] == '.') continue;
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
                failures += run_file(path);
                count++;
            }
            if (dir) closedir(dir);
        } else {
            failures += run_file(argv[a]);
            count++;
        }
    }
    printf("fuzz_safetensors_load: ran %d input%s\n", count, count == 1 ? "" : "s");
    if (input_fd >= 0) close(input_fd);
    return failures || count == 0;
}
#endif
