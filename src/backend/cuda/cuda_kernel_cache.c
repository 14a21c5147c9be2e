/* Compiled kernels kept on disk between runs, so that a process does not wait for NVRTC again
 * (20-30 ms a family here, more on large kernels). A file per compiled family, named by a hash of
 * everything the compile depends on (source text, options, compute capability, NVRTC version);
 * its first line states the length and a hash of the PTX that follows, so a truncated or damaged
 * file is noticed, ignored, and written again. Written to a temporary file and renamed into
 * place, so that processes compiling at once never see half a file. Every failure here only
 * costs a compile: none is an error. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_kernel_cache.h"
#include "core/core_internal.h"
#include "core/files.h"

#define CT_CUDA_CACHE_MAGIC "ctorch-ptx 1"

/* FNV-1a, 64 bits, continued from `hash`. */
static uint64_t fnv1a(uint64_t hash, const void *data, size_t size)
{
    const unsigned char *bytes = data;
    for (size_t i = 0; i < size; i++) {
        hash ^= bytes[i];
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

void ct_cuda_cache_key(const char *const parts[], int count, char key[CT_CUDA_CACHE_KEY_SIZE])
{
    /* two hashes from different starting points: 128 bits, so that distinct inputs never meet */
    uint64_t first = 0xcbf29ce484222325ULL, second = 0x84222325cbf29ce4ULL;
    for (int i = 0; i < count; i++) {
        size_t length = strlen(parts[i]) + 1; /* with the NUL: ("ab","c") is not ("a","bc") */
        first = fnv1a(first, parts[i], length);
        second = fnv1a(second, parts[i], length);
    }
    snprintf(key, CT_CUDA_CACHE_KEY_SIZE, "%016" PRIx64 "%016" PRIx64, first, second);
}

const char *ct_cuda_kernel_cache_dir(char *buf, size_t size)
{
    const char *chosen = getenv("CTORCH_CUDA_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int length = 0;
    if (chosen)
        length = snprintf(buf, size, "%s", chosen); /* "" turns the disk cache off */
    else if (xdg && xdg[0] == '/')
        length = snprintf(buf, size, "%s/ctorch/cuda", xdg);
    else if (home && home[0])
        length = snprintf(buf, size, "%s/.cache/ctorch/cuda", home);
    else
        buf[0] = '\0';
    if (length < 0 || (size_t)length >= size) { /* cut short, it would name another folder */
        ct_log_message(CT_LOG_INFO, "cuda: the kernel cache folder's name is longer than %zu bytes: no "
                       "disk cache", size - 1);
        buf[0] = '\0';
    }
    return buf;
}

/* mkdir -p; true when the folder exists afterwards. */
static bool make_folders(const char *path)
{
    char partial[1024];
    size_t length = strlen(path);
    if (length == 0 || length >= sizeof partial) return false;
    memcpy(partial, path, length + 1);
    for (char *slash = partial + 1; (slash = strchr(slash, '/')); slash++) {
        *slash = '\0';
        if (mkdir(partial, 0755) != 0 && errno != EEXIST) return false;
        *slash = '/';
    }
    return mkdir(partial, 0755) == 0 || errno == EEXIST;
}

static void file_path(const char *key, char *path, size_t size)
{
    char folder[900];
    ct_cuda_kernel_cache_dir(folder, sizeof folder);
    if (folder[0])
        snprintf(path, size, "%s/%s.ptx", folder, key);
    else
        path[0] = '\0';
}

char *ct_cuda_cache_read(const char *key)
{
    char path[1024];
    file_path(key, path, sizeof path);
    mode_t mode = 0;
    int fd = path[0] ? ct_open_regular_fd(path, &mode) : -1; /* a FIFO there would block fopen */
    FILE *file = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!file) {
        if (fd >= 0) close(fd);
        if (mode) ct_log_message(CT_LOG_INFO, "cuda: ignoring the kernel cache file %s: it is %s", path, ct_file_kind(mode));
        return NULL;
    }
    char *ptx = NULL;
    size_t length = 0;
    uint64_t hash = 0;
    char magic[64], sizes[64];
    if (fgets(magic, sizeof magic, file) && strcmp(magic, CT_CUDA_CACHE_MAGIC "\n") == 0 &&
        fgets(sizes, sizeof sizes, file) && sscanf(sizes, "%zu %" SCNx64, &length, &hash) == 2 &&
        length > 0 && length < ((size_t)1 << 30)) {
        ptx = malloc(length + 1);
        bool whole = ptx && fread(ptx, 1, length, file) == length && fgetc(file) == EOF;
        if (whole && fnv1a(0xcbf29ce484222325ULL, ptx, length) == hash) {
            ptx[length] = '\0';
        } else {
            free(ptx);
            ptx = NULL;
        }
    }
    fclose(file);
    if (!ptx) ct_log_message(CT_LOG_INFO, "cuda: ignoring the damaged kernel cache file %s", path);
    return ptx;
}

void ct_cuda_cache_discard(const char *key)
{
    char path[1024];
    file_path(key, path, sizeof path);
    if (path[0]) unlink(path);
}

void ct_cuda_cache_write(const char *key, const char *ptx)
{
    char folder[900], path[1024], temporary[1100];
    ct_cuda_kernel_cache_dir(folder, sizeof folder);
    if (!folder[0] || !make_folders(folder)) return;
    file_path(key, path, sizeof path);
    snprintf(temporary, sizeof temporary, "%s/.%s.XXXXXX", folder, key);
    int descriptor = mkstemp(temporary);
    if (descriptor < 0) return;
    FILE *file = fdopen(descriptor, "wb");
    if (!file) {
        close(descriptor);
        unlink(temporary);
        return;
    }
    size_t length = strlen(ptx);
    bool written = fprintf(file, "%s\n%zu %" PRIx64 "\n", CT_CUDA_CACHE_MAGIC, length,
                           fnv1a(0xcbf29ce484222325ULL, ptx, length)) > 0 &&
                   fwrite(ptx, 1, length, file) == length;
    written = fclose(file) == 0 && written;
    if (!written || rename(temporary, path) != 0) {
        ct_log_message(CT_LOG_DEBUG, "cuda: could not write the kernel cache file %s", path);
        unlink(temporary);
    }
}
