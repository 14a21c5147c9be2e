/* A file written whole or not at all: the bytes go to a temporary file in the target's folder
 * (save_target.c checks the target and names the temporary), which is synced and renamed over the
 * target, and the folder is synced. ct_save writes through it, and so do the other writers of the
 * library (llm.c's token and checkpoint files). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/save_internal.h"

static ct_status write_failed(const ct_io_atomic_file *f, int error)
{
    char reason[128];
    struct rlimit limit;
    if (error == EFBIG && getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        return ct_error(CT_ERR_IO, "ct_save: '%s': writing failed after %zu bytes: %s: the process's file size "
                        "limit (ulimit -f, RLIMIT_FSIZE) is %llu bytes; the file was not changed", f->path,
                        f->written, strerror_r(error, reason, sizeof reason), (unsigned long long)limit.rlim_cur);
    return ct_error(CT_ERR_IO, "ct_save: '%s': writing failed after %zu bytes: %s; the file was not "
                    "changed", f->path, f->written, strerror_r(error, reason, sizeof reason));
}

/* A file the size limit cannot hold is refused before its first byte: writing past the limit
 * raises SIGXFSZ, which ends a program that does not ignore it, leaving the temporary file. */
ct_status ct_io_atomic_check_size(const ct_io_atomic_file *f, uint64_t size)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY || size <= limit.rlim_cur)
        return CT_OK;
    char reason[128];
    return ct_error(CT_ERR_IO, "ct_save: '%s': the file would be %llu bytes, and the process's file size "
                    "limit (ulimit -f, RLIMIT_FSIZE) is %llu: %s; the file was not changed", f->path,
                    (unsigned long long)size, (unsigned long long)limit.rlim_cur,
                    strerror_r(EFBIG, reason, sizeof reason));
}

/* The temporary file of a replacement takes the old file's mode and, where it may, its owner. */
static ct_status keep_mode(const ct_io_save_target *t, int fd, const char *path)
{
    if (!t->exists) return CT_OK;
    int given = fchown(fd, t->uid, t->gid); /* only the superuser may give a file away: no error */
    (void)given;
    if (fchmod(fd, t->mode) == 0) return CT_OK;
    char reason[128];
    return ct_error(CT_ERR_IO, "ct_save: '%s': cannot give the new file the mode %04o of the old one: %s; "
                    "the file was not changed", path, (unsigned)t->mode, strerror_r(errno, reason, sizeof reason));
}

static ct_status sync_directory(const char *path, const char *directory)
{
    int fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int error = fd < 0 ? errno : (fsync(fd) == 0 ? 0 : errno);
    if (fd >= 0) close(fd);
    if (error == 0 || error == EINVAL || error == EROFS) return CT_OK; /* a folder that cannot sync */
    char reason[128];
    return ct_error(CT_ERR_IO, "ct_save: '%s' was written, but syncing its folder '%s' failed: %s",
                    path, directory, strerror_r(error, reason, sizeof reason));
}

ct_status ct_io_atomic_open(const char *path, ct_io_atomic_file *f)
{
    *f = (ct_io_atomic_file){.fd = -1, .path = path, .limit = ct_io_write_limit()};
    if (ct_io_save_target_resolve(path, &f->target) != CT_OK) return ct_last_error();
    ct_io_save_remove_stale_temporaries(&f->target, path);
    f->fd = ct_io_save_temporary_create(&f->target, &f->temp);
    if (f->fd < 0) {
        char reason[128];
        ct_status status = ct_error(CT_ERR_IO, "ct_save: '%s': cannot create a temporary file in '%s': %s",
                                    path, f->target.directory, strerror_r(errno, reason, sizeof reason));
        ct_io_atomic_abandon(f);
        return status;
    }
    ct_status status = keep_mode(&f->target, f->fd, path);
    if (status != CT_OK) ct_io_atomic_abandon(f);
    return status;
}

ct_status ct_io_atomic_write(ct_io_atomic_file *f, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        size_t chunk = n < ((size_t)1 << 30) ? n : (size_t)1 << 30;
        bool simulated_failure = f->limit != SIZE_MAX && chunk > f->limit - f->written;
        if (simulated_failure) chunk = f->limit - f->written;
        ssize_t done = chunk ? write(f->fd, p, chunk) : 0;
        if (done < 0 && errno == EINTR) continue;
        if (done < 0) return write_failed(f, errno);
        p += done;
        n -= (size_t)done;
        f->written += (size_t)done;
        if (simulated_failure) return write_failed(f, EIO);
    }
    return CT_OK;
}

ct_status ct_io_atomic_commit(ct_io_atomic_file *f)
{
    char reason[128];
    ct_status status = CT_OK;
    if (fsync(f->fd) != 0)
        status = ct_error(CT_ERR_IO, "ct_save: '%s': syncing the temporary file failed: %s; the file "
                          "was not changed", f->path, strerror_r(errno, reason, sizeof reason));
    int closed = close(f->fd);
    f->fd = -1;
    if (closed != 0 && status == CT_OK)
        status = ct_error(CT_ERR_IO, "ct_save: '%s': closing the temporary file failed: %s; the file "
                          "was not changed", f->path, strerror_r(errno, reason, sizeof reason));
    if (status == CT_OK && rename(f->temp, f->target.path) != 0)
        status = ct_error(CT_ERR_IO, "ct_save: cannot replace '%s': %s; the file was not changed", f->path,
                          strerror_r(errno, reason, sizeof reason));
    if (status != CT_OK) {
        ct_io_atomic_abandon(f);
        return status;
    }
    status = sync_directory(f->path, f->target.directory);
    free(f->temp);
    f->temp = NULL;
    ct_io_save_target_free(&f->target);
    return status;
}

void ct_io_atomic_abandon(ct_io_atomic_file *f)
{
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    if (f->temp) unlink(f->temp);
    free(f->temp);
    f->temp = NULL;
    ct_io_save_target_free(&f->target);
}
