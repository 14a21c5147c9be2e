/* The compile notice and the records behind it (see compile_notice.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/compile_notice.h"
#include "core/core_internal.h"

const char *ct_compile_cache_dir(const char *variable, const char *leaf, char *buf, size_t size)
{
    const char *chosen = getenv(variable);
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int length = 0;
    if (chosen)
        length = snprintf(buf, size, "%s", chosen);
    else if (xdg && xdg[0] == '/')
        length = snprintf(buf, size, "%s/ctorch/%s", xdg, leaf);
    else if (home && home[0])
        length = snprintf(buf, size, "%s/.cache/ctorch/%s", home, leaf);
    else
        buf[0] = '\0';
    if (length < 0 || (size_t)length >= size) buf[0] = '\0'; /* cut short, it would name another folder */
    return buf;
}

static uint64_t fnv1a(uint64_t hash, const void *data, size_t size)
{
    const unsigned char *bytes = data;
    for (size_t i = 0; i < size; i++) {
        hash ^= bytes[i];
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

void ct_compile_key(const char *const parts[], int count, char key[CT_COMPILE_KEY_SIZE])
{
    uint64_t first = 0xcbf29ce484222325ULL, second = 0x84222325cbf29ce4ULL;
    for (int i = 0; i < count; i++) {
        size_t length = strlen(parts[i]) + 1; /* with the NUL: ("ab","c") is not ("a","bc") */
        first = fnv1a(first, parts[i], length);
        second = fnv1a(second, parts[i], length);
    }
    snprintf(key, CT_COMPILE_KEY_SIZE, "%016" PRIx64 "%016" PRIx64, first, second);
}

static bool stamp_path(const char *dir, const char *key, char *path, size_t size)
{
    int length = snprintf(path, size, "%s/%s.built", dir, key);
    return dir[0] && length > 0 && (size_t)length < size;
}

bool ct_compile_stamp_exists(const char *dir, const char *key)
{
    char path[1200];
    struct stat st;
    return stamp_path(dir, key, path, sizeof path) && stat(path, &st) == 0 && S_ISREG(st.st_mode);
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

void ct_compile_stamp_write(const char *dir, const char *key)
{
    char path[1200];
    if (!stamp_path(dir, key, path, sizeof path) || !make_folders(dir)) return;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
}

/* A person watching (stderr a terminal), as progress bars do: logs and the tests' captured output
 * stay as they were. CTORCH_COMPILE_NOTICE=1 or 0 says it or not, wherever stderr goes. */
static bool wanted(void)
{
    const char *chosen = getenv("CTORCH_COMPILE_NOTICE");
    if (chosen && chosen[0]) return strcmp(chosen, "0") != 0;
    return isatty(STDERR_FILENO) && ct_get_log_level() >= CT_LOG_WARN;
}

void ct_compile_notice(const char *backend, const char *device, const char *name, const char *where)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char said[64][32];
    static int said_count;
    if (!wanted()) return;
    pthread_mutex_lock(&lock);
    bool first = true;
    for (int i = 0; i < said_count && first; i++) first = strcmp(said[i], device) != 0;
    if (first && said_count < (int)CT_ARRAY_LEN(said)) snprintf(said[said_count++], sizeof said[0], "%s", device);
    pthread_mutex_unlock(&lock);
    if (!first) return;
    fprintf(stderr, "ctorch: compiling %s kernels for %s (%s) as each is first used: seconds each, once "
            "(first run; %s)\n", backend, device, name, where);
    fflush(stderr);
}
