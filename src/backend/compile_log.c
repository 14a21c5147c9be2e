/* The first lines of a kernel compiler's log, for error messages (compile_log.h). */
#include <stdio.h>
#include <string.h>

#include "backend/compile_log.h"

void ct_compile_log_first_lines(const char *log, const char *what, char *buf, size_t size)
{
    size_t used = 0;
    int lines = 0;
    buf[0] = '\0';
    while (*log && lines < CT_COMPILE_LOG_LINES && used + 1 < size) {
        size_t length = strcspn(log, "\n");
        if (length > 0) {
            int written = snprintf(buf + used, size - used, "%s%.*s", lines ? " | " : "",
                                   (int)length, log);
            used += written > 0 ? (size_t)written : 0;
            lines++;
        }
        log += length;
        if (*log == '\n') log++;
    }
    if (lines == 0) snprintf(buf, size, "(the %s log is empty)", what);
}
