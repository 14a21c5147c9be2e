/* Opening the files the library reads (checkpoints, data sets, caches) without hanging on what is
 * not a regular file, and showing untrusted bytes (paths, names, fields) in one-line messages. */
#ifndef CT_CORE_FILES_H
#define CT_CORE_FILES_H

#include <stddef.h>
#include <sys/types.h>

#include "core/core_internal.h"

/* What st_mode is, for messages: "a folder", "a FIFO (named pipe)", "a character device", ... */
const char *ct_file_kind(mode_t mode);

/* ct_open_regular_file without a message: -1 with errno when the path cannot be opened, or with
 * *mode set (non-zero) to what it is when that is not a regular file. */
int ct_open_regular_fd(const char *path, mode_t *mode);

/* path opened for reading (blocking, close-on-exec) when it is a regular file. A FIFO would block
 * open until a writer came and a device such as /dev/zero never ends, so the path is checked with
 * stat first and opened with O_NONBLOCK, then checked again with fstat (it may have changed in
 * between). Otherwise -1, with CT_ERR_IO recorded: "<fn>: cannot open '<shown>': <reason>" or
 * "<fn>: '<shown>' is a FIFO (named pipe), not a regular file; ...". shown is the path as a
 * message may print it. */
int ct_open_regular_file(const char *fn, const char *path, const char *shown);

/* What path names when it is there and is not a regular file ("a FIFO (named pipe)", "a folder",
 * ...), else NULL (a regular file, nothing, or a path that cannot be reached: the opener reports
 * those). For paths handed to something that opens them blindly, as dlopen does: a FIFO would
 * block it. */
const char *ct_path_not_regular(const char *path);

/* bytes[0, length) for a one-line message: control bytes (and DEL) as \xNN so that nothing from a
 * file can move a terminal's cursor or end the line, cut at a character boundary with "..." to fit
 * size (at least 8). Returns buf. */
const char *ct_escape_text(const char *bytes, size_t length, char *buf, size_t size);

#endif
