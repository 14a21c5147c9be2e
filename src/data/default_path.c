/* Finding the shipped data sets (digits, and Tiny Shakespeare for the GPT): $CTORCH_DATA, then the install location relative to the
 * library (so that an installed tree, moved or not, uses its own data and never the source tree
 * it was built from), the source tree (a library in its build folder), and the absolute install
 * location. The source tree only for a library (or a program) that runs from its build folder.
 *
 * The build passes CTORCH_SOURCE_DATA_DIR, CTORCH_INSTALL_DATA_DIR (absolute) and
 * CTORCH_LIBDIR_TO_DATA_DIR / CTORCH_BINDIR_TO_DATA_DIR (relative: the library may be linked
 * statically into a program in bin/). */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/core_internal.h"
#include "ctorch/data.h"

#define DATA_FILE "digits.csv.gz"
#define TEXT_FILE "tinyshakespeare.txt"

static _Thread_local char found[PATH_MAX + sizeof TEXT_FILE + 1];

static bool is_regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_folder(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* folder/name into `found` when that file exists. */
static bool try_folder(const char *folder, const char *name)
{
    int n = snprintf(found, sizeof found, "%s/%s", folder, name);
    return n > 0 && (size_t)n < sizeof found && is_regular_file(found);
}

/* CTORCH_DATA names the digits file or the folder of the shipped files. */
static const char *from_environment(const char *fn, const char *value, const char *name)
{
    if (strcmp(name, DATA_FILE) == 0 && is_regular_file(value) && strlen(value) < sizeof found) {
        strcpy(found, value);
        return found;
    }
    if (is_folder(value) && try_folder(value, name)) return found;
    if (is_regular_file(value) && strlen(value) < sizeof found) { /* the digits file: its folder */
        char folder[sizeof found];
        strcpy(folder, value);
        if (try_folder(dirname(folder), name)) return found;
    }
    return ct_error_null(CT_ERR_IO, "%s: CTORCH_DATA is '%s', which is neither %s nor a folder holding %s",
                         fn, value, strcmp(name, DATA_FILE) == 0 ? "a file" : "a file beside it", name);
}

/* Whether the object holding this code (the library, or a program it is linked into) lies in the
 * build folder it was built in: only then is the source tree its data's place. An installed tree
 * whose data file was removed must say so, not read a source tree that may have changed or gone. */
static bool runs_from_build_folder(void)
{
#ifdef CTORCH_BUILD_DIR
    Dl_info info;
    char object[PATH_MAX], build[PATH_MAX];
    if (!dladdr((void *)ct_default_dataset_path, &info) || !info.dli_fname || !realpath(info.dli_fname, object) ||
        !realpath(CTORCH_BUILD_DIR, build))
        return false;
    size_t length = strlen(build);
    return strncmp(object, build, length) == 0 && object[length] == '/';
#else
    return false;
#endif
}

/* <the folder of the object holding this code>/relative, when that holds the file. */
static bool try_next_to_library(const char *relative, const char *name)
{
    Dl_info info;
    if (!dladdr((void *)ct_default_dataset_path, &info) || !info.dli_fname) return false;
    char object[PATH_MAX];
    if (!realpath(info.dli_fname, object)) return false;
    char folder[PATH_MAX + 64], resolved[PATH_MAX];
    int n = snprintf(folder, sizeof folder, "%s/%s/ctorch", dirname(object), relative);
    /* The path without "lib/../": it is shown (ctorch info). */
    return n > 0 && (size_t)n < sizeof folder && realpath(folder, resolved) && try_folder(resolved, name);
}

static const char *find(const char *fn, const char *name)
{
    const char *variable = getenv("CTORCH_DATA");
    if (variable && *variable) return from_environment(fn, variable, name);
#ifdef CTORCH_LIBDIR_TO_DATA_DIR
    if (try_next_to_library(CTORCH_LIBDIR_TO_DATA_DIR, name)) return found;
#endif
#ifdef CTORCH_BINDIR_TO_DATA_DIR
    if (try_next_to_library(CTORCH_BINDIR_TO_DATA_DIR, name)) return found;
#endif
    bool in_build = runs_from_build_folder();
#ifdef CTORCH_SOURCE_DATA_DIR
    if (in_build && try_folder(CTORCH_SOURCE_DATA_DIR, name)) return found;
#endif
#ifdef CTORCH_INSTALL_DATA_DIR
    if (try_folder(CTORCH_INSTALL_DATA_DIR, name)) return found;
#endif
    return ct_error_null(CT_ERR_IO, "%s: %s is in none of: $CTORCH_DATA "
                         "(not set), %s%s%s, the install location (%s); set "
                         "CTORCH_DATA to the %s", fn, name,
                         in_build ? "the source tree (" : "the installed tree's share/ctorch (an installed "
                                                          "tree never reads the source tree",
#ifdef CTORCH_SOURCE_DATA_DIR
                         in_build ? CTORCH_SOURCE_DATA_DIR : "",
#else
                         in_build ? "not known" : "",
#endif
                         ")",
#ifdef CTORCH_INSTALL_DATA_DIR
                         CTORCH_INSTALL_DATA_DIR,
#else
                         "not known",
#endif
                         strcmp(name, DATA_FILE) == 0 ? "file or to its folder" : "folder holding it");
}

const char *ct_default_dataset_path(void) { return find("ct_default_dataset_path", DATA_FILE); }

const char *ct_default_text_path(void) { return find("ct_default_text_path", TEXT_FILE); }
