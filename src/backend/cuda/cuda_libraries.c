/* Opening the CUDA libraries at run time (see cuda_libraries.h): the driver when the CUDA
 * backend starts, NVRTC at the first kernel compile, cuBLAS at the first matrix product. Each is
 * opened once per process; a failure is kept with its reason and given to every later caller. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_libraries.h"
#include "core/files.h"

#ifndef CTORCH_CUDA_TOOLKIT_LIBDIR
#define CTORCH_CUDA_TOOLKIT_LIBDIR "" /* the build saw no toolkit folder: the search path only */
#endif

/* A library the address space cannot hold (ulimit -v) is not "not found": the loader says
 * "failed to map segment" or "Cannot allocate memory". */
static bool out_of_address_space(const char *error)
{
    return error && (strstr(error, "failed to map segment") || strstr(error, "Cannot allocate memory"));
}

static const char *memory_note(const char *error)
{
    return out_of_address_space(error) ? "; out of memory: the process's address space (ulimit -v) "
                                         "has no room to map it"
                                       : "";
}

/* dlopen of the file `variable` names when it is set, else of each of `names` (a NULL-terminated
 * list) through the loader's search path, then in the toolkit's library folder when
 * `toolkit_fallback`. NULL with "<what> not found (<dlerror>)" in reason and the failure's kind
 * in *failure. The handle is never closed. */
static void *open_library(const char *what, const char *variable, const char *const names[],
                          bool toolkit_fallback, char *reason, size_t reason_size, ct_status *failure)
{
    *failure = CT_ERR_BACKEND;
    const char *chosen = variable ? getenv(variable) : NULL;
    if (chosen && chosen[0]) {
        /* a FIFO would block dlopen (a name without a slash is searched for, not a path) */
        const char *kind = strchr(chosen, '/') ? ct_path_not_regular(chosen) : NULL;
        if (kind) {
            snprintf(reason, reason_size, "%s not found (%s is %s, not a library file, from %s)", what, chosen,
                     kind, variable);
            return NULL;
        }
        void *library = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            const char *error = dlerror();
            if (!error) error = "dlopen gave no reason";
            snprintf(reason, reason_size, "%s not found (%s, from %s)%s", what, error, variable, memory_note(error));
            if (out_of_address_space(error)) *failure = CT_ERR_OUT_OF_MEMORY;
        }
        return library;
    }
    char first_error[512] = "";
    for (int i = 0; names[i]; i++) {
        void *library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (library) return library;
        if (i == 0) snprintf(first_error, sizeof first_error, "%s", dlerror());
    }
    if (toolkit_fallback && CTORCH_CUDA_TOOLKIT_LIBDIR[0]) {
        for (int i = 0; names[i]; i++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", CTORCH_CUDA_TOOLKIT_LIBDIR, names[i]);
            void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (library) return library;
        }
    }
    /* The first name's error says it best ("libcuda.so.1: cannot open shared object file"). */
    snprintf(reason, reason_size, "%s not found (%s)%s", what, first_error, memory_note(first_error));
    if (out_of_address_space(first_error)) *failure = CT_ERR_OUT_OF_MEMORY;
    return NULL;
}

/* dlsym of one function into *slot (a member of a table, as void *: POSIX's idiom for function
 * pointers); false with "<library> has no function <symbol> (<dlerror>)" in reason. */
static bool find_function(void *library, const char *library_name, const char *symbol, void **slot,
                          char *reason, size_t reason_size)
{
    dlerror();
    *slot = dlsym(library, symbol);
    if (*slot) return true;
    const char *error = dlerror();
    snprintf(reason, reason_size, "%s has no function %s (%s)", library_name, symbol,
             error ? error : "a NULL symbol");
    return false;
}

/* One library's table: filled once, then read-only. */
typedef struct opened_table {
    pthread_once_t once;
    bool ok;
    ct_status failure;
    char reason[512];
} opened_table;

/* Looks up f of a list into table->f, while every earlier one was found. */
#define CT_CUDA_FIND_(f)                                                                         \
    if (ok) ok = find_function(library, library_name, CT_CUDA_SYMBOL(f), (void **)&table->f,    \
                               state->reason, sizeof state->reason);

/* ---- the driver: the loader's search path only (the toolkit has a link stub, never a driver) */

static ct_cuda_driver driver_table;
static opened_table driver_state = {PTHREAD_ONCE_INIT, false, CT_ERR_BACKEND, ""};

static void open_driver(void)
{
    static const char *const names[] = {"libcuda.so.1", NULL};
    const char *library_name = "the CUDA driver library";
    void *library = open_library("CUDA driver library", "CTORCH_CUDA_DRIVER", names, false,
                                         driver_state.reason, sizeof driver_state.reason, &driver_state.failure);
    if (!library) return;
    ct_cuda_driver *table = &driver_table;
    opened_table *state = &driver_state;
    bool ok = true;
    CT_CUDA_DRIVER_FUNCTIONS(CT_CUDA_FIND_)
    state->ok = ok;
}

const ct_cuda_driver *ct_cuda_driver_library(char *reason, size_t reason_size, ct_status *failure)
{
    pthread_once(&driver_state.once, open_driver);
    if (!driver_state.ok && reason) snprintf(reason, reason_size, "%s", driver_state.reason);
    if (!driver_state.ok && failure) *failure = driver_state.failure;
    return driver_state.ok ? &driver_table : NULL;
}

/* ---- NVRTC and cuBLAS: the toolkit's libraries, also looked for in its folder ---- */

static ct_cuda_nvrtc nvrtc_table;
static opened_table nvrtc_state = {PTHREAD_ONCE_INIT, false, CT_ERR_BACKEND, ""};

static void open_nvrtc(void)
{
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so", NULL};
    const char *library_name = "NVRTC";
    void *library = open_library("NVRTC (the CUDA kernel compiler)", "CTORCH_CUDA_NVRTC",
                                         names, true, nvrtc_state.reason, sizeof nvrtc_state.reason, &nvrtc_state.failure);
    if (!library) return;
    ct_cuda_nvrtc *table = &nvrtc_table;
    opened_table *state = &nvrtc_state;
    bool ok = true;
    CT_CUDA_NVRTC_FUNCTIONS(CT_CUDA_FIND_)
    state->ok = ok;
}

const ct_cuda_nvrtc *ct_cuda_nvrtc_library(char *reason, size_t reason_size, ct_status *failure)
{
    pthread_once(&nvrtc_state.once, open_nvrtc);
    if (!nvrtc_state.ok && reason) snprintf(reason, reason_size, "%s", nvrtc_state.reason);
    if (!nvrtc_state.ok && failure) *failure = nvrtc_state.failure;
    return nvrtc_state.ok ? &nvrtc_table : NULL;
}

static ct_cuda_cublas cublas_table;
static opened_table cublas_state = {PTHREAD_ONCE_INIT, false, CT_ERR_BACKEND, ""};

static void open_cublas(void)
{
    static const char *const names[] = {"libcublas.so.13", "libcublas.so", NULL};
    const char *library_name = "cuBLAS";
    void *library = open_library("cuBLAS", "CTORCH_CUDA_CUBLAS", names, true,
                                         cublas_state.reason, sizeof cublas_state.reason, &cublas_state.failure);
    if (!library) return;
    ct_cuda_cublas *table = &cublas_table;
    opened_table *state = &cublas_state;
    bool ok = true;
    CT_CUDA_CUBLAS_FUNCTIONS(CT_CUDA_FIND_)
    state->ok = ok;
}

const ct_cuda_cublas *ct_cuda_cublas_library(char *reason, size_t reason_size, ct_status *failure)
{
    pthread_once(&cublas_state.once, open_cublas);
    if (!cublas_state.ok && reason) snprintf(reason, reason_size, "%s", cublas_state.reason);
    if (!cublas_state.ok && failure) *failure = cublas_state.failure;
    return cublas_state.ok ? &cublas_table : NULL;
}
