/* The line a user sees while kernels compile: the first OpenCL or CUDA run compiles each kernel
 * family as it is first used (seconds each with PoCL, 20-50 s for a training run), which otherwise
 * looks like a hang. Said once per device and process, on stderr, only when a compile happens:
 * each backend keeps a record of what it compiled (CUDA: its PTX cache; OpenCL: a stamp per family
 * built, as the driver's own cache cannot be asked). Said when stderr is a terminal (unless
 * CTORCH_LOG=error), as progress bars are; CTORCH_COMPILE_NOTICE=1 says it wherever stderr goes,
 * CTORCH_COMPILE_NOTICE=0 never. */
#ifndef CT_BACKEND_COMPILE_NOTICE_H
#define CT_BACKEND_COMPILE_NOTICE_H

#include <stdbool.h>
#include <stddef.h>

enum { CT_COMPILE_KEY_SIZE = 33 };

/* The folder of a backend's records: $variable when set ("" turns them off), else
 * $XDG_CACHE_HOME/ctorch/<leaf>, else $HOME/.cache/ctorch/<leaf>; "" when there is none. */
const char *ct_compile_cache_dir(const char *variable, const char *leaf, char *buf, size_t size);
/* 128 bits of FNV-1a over parts, as 32 hex digits. */
void ct_compile_key(const char *const parts[], int count, char key[CT_COMPILE_KEY_SIZE]);
/* Whether dir holds key's stamp; false for dir "". */
bool ct_compile_stamp_exists(const char *dir, const char *key);
/* Leaves key's stamp in dir (made when missing); a failure only means the line shows again. */
void ct_compile_stamp_write(const char *dir, const char *key);

/* "ctorch: compiling <backend> kernels for <device> (<name>) as each is first used ... (first run;
 * <where>)": once per device per process. */
void ct_compile_notice(const char *backend, const char *device, const char *name, const char *where);

#endif
