/* ct_save's target: the checked path it writes, its temporary file, and leftovers of killed saves. */
#ifndef CT_IO_SAVE_INTERNAL_H
#define CT_IO_SAVE_INTERNAL_H

#include <stdbool.h>
#include <sys/types.h>

#include "io/io_internal.h"

typedef struct ct_io_save_target {
    char *path;       /* the file to write: the given path, or the file its symbolic link leads to */
    char *directory;  /* its folder, where the temporary file goes */
    const char *base; /* its name in the folder (inside path) */
    long name_max;    /* the longest name the folder takes */
    bool via_link;    /* the given path is a symbolic link */
    bool exists;      /* a regular file is there, to be replaced keeping these: */
    mode_t mode;
    uid_t uid;
    gid_t gid;
} ct_io_save_target;

/* Checks path as a place to save (see ct_save_check_path) and fills out; on failure records the
 * error and leaves out empty. */
ct_status ct_io_save_target_resolve(const char *path, ct_io_save_target *out);
void ct_io_save_target_free(ct_io_save_target *t);

/* Creates "<folder>/.<name>.tmp-<pid>-<n>" exclusively (the umask applies, as for any new file);
 * a name too long for that keeps only its start. The descriptor, or -1 with errno. */
int ct_io_save_temporary_create(const ct_io_save_target *t, char **temp_path);

/* Temporary files of earlier saves to this name whose process no longer runs (killed during the
 * save) are removed, and each removal is logged (a warning); one whose process still runs is a
 * save in progress and is left, with a warning once it is an hour old. path: for the messages. */
void ct_io_save_remove_stale_temporaries(const ct_io_save_target *t, const char *path);

/* A file written whole or not at all (atomic_file.c): open checks the target and creates the
 * temporary file; write appends (failing as ct_io_fail_write_after_for_testing asks); commit syncs
 * it and renames it over the target; abandon removes it. After a failed open, write or commit the
 * target is as it was; a failed write still needs abandon. Messages begin "ct_save:". */
typedef struct ct_io_atomic_file {
    ct_io_save_target target;
    char *temp;
    int fd;
    const char *path; /* as given, for messages */
    size_t written, limit;
} ct_io_atomic_file;
ct_status ct_io_atomic_open(const char *path, ct_io_atomic_file *f);
/* CT_ERR_IO naming the limit when a file of size bytes would pass ulimit -f. */
ct_status ct_io_atomic_check_size(const ct_io_atomic_file *f, uint64_t size);
ct_status ct_io_atomic_write(ct_io_atomic_file *f, const void *data, size_t n);
ct_status ct_io_atomic_commit(ct_io_atomic_file *f);
void ct_io_atomic_abandon(ct_io_atomic_file *f);

#endif
