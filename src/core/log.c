/* Logging to stderr, with the level taken from CTORCH_LOG. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

static atomic_int log_level = -1; /* -1: not read from the environment yet */

static int level_from_environment(void)
{
    const char *text = getenv("CTORCH_LOG");
    if (!text) return CT_LOG_WARN;
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < (int)CT_ARRAY_LEN(names); i++)
        if (strcmp(text, names[i]) == 0) return i;
    fprintf(stderr, "ctorch: CTORCH_LOG='%s' is not a log level; use error, warn, info or debug\n",
            text);
    return CT_LOG_WARN;
}

ct_log_level ct_get_log_level(void)
{
    int level = atomic_load(&log_level);
    if (level < 0) {
        level = level_from_environment();
        atomic_store(&log_level, level);
    }
    return (ct_log_level)level;
}

void ct_set_log_level(ct_log_level level) { atomic_store(&log_level, (int)level); }

void ct_log_message(ct_log_level level, const char *fmt, ...)
{
    if ((int)level > (int)ct_get_log_level()) return;
    static const char *const tags[] = {"error", "warning", "info", "debug"};
    char line[1200];
    va_list args;
    va_start(args, fmt);
    vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    fprintf(stderr, "ctorch %s: %s\n", tags[level], line);
}

const char *ct_format_bytes(double bytes, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int unit = 0;
    while (bytes >= 1024.0 && unit + 1 < (int)CT_ARRAY_LEN(units)) {
        bytes /= 1024.0;
        unit++;
    }
    if (unit == 0)
        snprintf(buf, size, "%.0f B", bytes);
    else
        snprintf(buf, size, "%.2f %s", bytes, units[unit]);
    return buf;
}
