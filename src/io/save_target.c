/* Where ct_save writes, checked before anything is written: the path's folder exists and can be
 * written, the name fits the folder, and what is there already is a regular file that may be
 * replaced (a symbolic link is followed to the file it leads to). Also the temporary file's name,
 * which must fit the folder too, and the temporary files that killed saves left behind. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/files.h"
#include "io/save_internal.h"

/* ".tmp-" and two numbers of at most 10 digits (a pid_t, a counter) after "." and the name. */
#define TEMPORARY_EXTRA ((long)(1 + 5 + 10 + 1 + 10))
/* A temporary file whose process still runs is someone's save in progress, unless it is this old. */
#define TEMPORARY_STALE_SECONDS 3600

static ct_status fail_io(const char *fmt, ...) CT_PRINTF(1, 2);
static ct_status fail_io(const char *fmt, ...)
{
    char message[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    return ct_error(CT_ERR_IO, "ct_save: %s", message);
}

/* The longest file name the folder takes (NAME_MAX where it cannot say). */
static long name_max(const char *directory)
{
    long max = pathconf(directory, _PC_NAME_MAX);
    return max > 0 ? max : NAME_MAX;
}

/* out->path: the path, or where its symbolic link leads; out->via_link says which. */
static ct_status follow_link(const char *path, ct_io_save_target *out)
{
    struct stat info;
    char reason[128];
    if (lstat(path, &info) != 0 || !S_ISLNK(info.st_mode)) {
        out->path = strdup(path);
        return out->path ? CT_OK : ct_error(CT_ERR_OUT_OF_MEMORY, "ct_save: no host memory");
    }
    out->via_link = true;
    out->path = realpath(path, NULL);
    if (out->path) return CT_OK;
    int error = errno;
    char target[PATH_MAX] = "";
    ssize_t n = readlink(path, target, sizeof target - 1);
    target[n > 0 ? n : 0] = '\0';
    if (error == ENOENT)
        return fail_io("'%s' is a symbolic link to '%s', which does not exist; ct_save follows links to "
                       "existing files only (save to the target's path to create it)", path, target);
    return fail_io("cannot follow the symbolic link '%s' (to '%s'): %s", path, target,
                   strerror_r(error, reason, sizeof reason));
}

/* The folder: there, a folder, writable. */
static ct_status check_directory(const char *path, const char *directory)
{
    struct stat info;
    char reason[128];
    if (stat(directory, &info) != 0) {
        if (errno == ENOENT) return fail_io("'%s': the folder '%s' does not exist", path, directory);
        return fail_io("'%s': cannot reach the folder '%s': %s", path, directory,
                       strerror_r(errno, reason, sizeof reason));
    }
    if (!S_ISDIR(info.st_mode))
        return fail_io("'%s': '%s' is %s, not a folder", path, directory, ct_file_kind(info.st_mode));
    if (access(directory, W_OK | X_OK) != 0)
        return fail_io("'%s': cannot write into the folder '%s': %s", path, directory,
                       strerror_r(errno, reason, sizeof reason));
    return CT_OK;
}

/* What is at the target already: nothing, or a regular file that may be written. */
static ct_status check_existing(const char *path, ct_io_save_target *t)
{
    struct stat info;
    char reason[128];
    const char *through = t->via_link ? " (where its symbolic link leads)" : "";
    if (lstat(t->path, &info) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return CT_OK; /* nothing there: the folder says why */
        return fail_io("cannot replace '%s'%s: %s", path, through, strerror_r(errno, reason, sizeof reason));
    }
    if (S_ISDIR(info.st_mode))
        return fail_io("cannot replace '%s'%s: it is a folder; give a file name", path, through);
    if (!S_ISREG(info.st_mode))
        return fail_io("cannot replace '%s'%s: it is %s, not a regular file; ct_save writes regular "
                       "files only", path, through, ct_file_kind(info.st_mode));
    /* The mode bits too: a superuser may write anything, but a read-only file stays read-only. */
    if ((info.st_mode & 0222) == 0 || access(t->path, W_OK) != 0)
        return fail_io("cannot replace '%s'%s: it is read-only (mode %04o); make it writable (chmod u+w) "
                       "or save to another path", path, through, (unsigned)(info.st_mode & 07777));
    t->exists = true;
    t->mode = info.st_mode & 07777;
    t->uid = info.st_uid;
    t->gid = info.st_gid;
    return CT_OK;
}

ct_status ct_io_save_target_resolve(const char *path, ct_io_save_target *out)
{
    *out = (ct_io_save_target){0};
    if (!*path) return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_save: the path is empty");
    ct_status status = follow_link(path, out);
    if (status != CT_OK) return status;
    const char *slash = strrchr(out->path, '/');
    out->base = slash ? slash + 1 : out->path;
    if (*out->base == '\0') {
        ct_io_save_target_free(out);
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_save: '%s' names a folder; give a file name", path);
    }
    size_t directory_length = slash ? (size_t)(slash - out->path) : 1;
    out->directory = malloc(directory_length + 2);
    if (!out->directory) {
        ct_io_save_target_free(out);
        return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_save: no host memory");
    }
    if (!slash) strcpy(out->directory, ".");
    else if (slash == out->path) strcpy(out->directory, "/");
    else memcpy(out->directory, out->path, directory_length), out->directory[directory_length] = '\0';
    out->name_max = name_max(out->directory);
    size_t length = strlen(out->base);
    if ((long)length > out->name_max)
        status = ct_error(CT_ERR_INVALID_ARGUMENT, "ct_save: '%s': the file name is %zu bytes; the folder "
                          "takes names of at most %ld", path, length, out->name_max);
    if (status == CT_OK) status = check_existing(path, out); /* first: "it is a folder" says most */
    if (status == CT_OK) status = check_directory(path, out->directory);
    if (status != CT_OK) ct_io_save_target_free(out);
    return status;
}

void ct_io_save_target_free(ct_io_save_target *t)
{
    free(t->path);
    free(t->directory);
    *t = (ct_io_save_target){0};
}

/* How much of the name the temporary file's name keeps: all of it when it fits, else a prefix cut
 * at a character boundary, so that ".<prefix>.tmp-<pid>-<n>" fits the folder. */
static size_t kept_prefix(const ct_io_save_target *t)
{
    size_t length = strlen(t->base);
    long room = t->name_max - TEMPORARY_EXTRA;
    if (room < 1) room = 1;
    if ((long)length <= room) return length;
    size_t kept = (size_t)room;
    for (int back = 0; back < 3 && kept > 1 && ((unsigned char)t->base[kept] & 0xC0) == 0x80; back++) kept--;
    return kept;
}

int ct_io_save_temporary_create(const ct_io_save_target *t, char **temp_path)
{
    static atomic_uint counter;
    size_t kept = kept_prefix(t);
    size_t size = strlen(t->directory) + kept + 64;
    char *name = malloc(size);
    if (!name) return -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(name, size, "%s/.%.*s.tmp-%ld-%u", t->directory, (int)kept, t->base, (long)getpid(),
                 atomic_fetch_add(&counter, 1));
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) {
            if (fd >= 0) *temp_path = name;
            else free(name);
            return fd;
        }
    }
    free(name);
    errno = EEXIST;
    return -1;
}

/* The process id of a temporary file's name ".<prefix>.tmp-<pid>-<n>", or 0 when it is not one. */
static long temporary_pid(const char *entry, const char *base, size_t kept)
{
    if (entry[0] != '.' || strncmp(entry + 1, base, kept) != 0 || strncmp(entry + 1 + kept, ".tmp-", 5) != 0)
        return 0;
    const char *digits = entry + 1 + kept + 5;
    char *end;
    long pid = strtol(digits, &end, 10);
    if (end == digits || *digits < '1' || *digits > '9' || *end != '-' || end[1] < '0' || end[1] > '9') return 0;
    for (end++; *end; end++)
        if (*end < '0' || *end > '9') return 0;
    return pid;
}

void ct_io_save_remove_stale_temporaries(const ct_io_save_target *t, const char *path)
{
    DIR *folder = opendir(t->directory);
    if (!folder) return;
    size_t kept = kept_prefix(t);
    char reason[128];
    for (struct dirent *entry; (entry = readdir(folder));) {
        long pid = temporary_pid(entry->d_name, t->base, kept);
        if (pid <= 0 || pid == (long)getpid()) continue; /* not one, or a save of this process */
        struct stat info;
        if (fstatat(dirfd(folder), entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(info.st_mode) ||
            info.st_uid != geteuid())
            continue; /* only regular files of this user */
        bool running = kill((pid_t)pid, 0) == 0 || errno == EPERM;
        if (running) {
            if (time(NULL) - info.st_mtime > TEMPORARY_STALE_SECONDS)
                ct_log_message(CT_LOG_WARN, "ct_save: '%s/%s' looks like the temporary file of a save to '%s' "
                               "that did not finish, but process %ld (which wrote it) still runs: left in "
                               "place; remove it if no save is running", t->directory, entry->d_name, path, pid);
            continue;
        }
        if (unlinkat(dirfd(folder), entry->d_name, 0) == 0)
            ct_log_message(CT_LOG_WARN, "ct_save: removed '%s/%s', the temporary file of an earlier save to "
                           "'%s' that did not finish (process %ld no longer runs)", t->directory,
                           entry->d_name, path, pid);
        else
            ct_log_message(CT_LOG_WARN, "ct_save: '%s/%s' is the temporary file of an earlier save to '%s' "
                           "that did not finish (process %ld no longer runs), and it cannot be removed: %s",
                           t->directory, entry->d_name, path, pid, strerror_r(errno, reason, sizeof reason));
    }
    closedir(folder);
}
