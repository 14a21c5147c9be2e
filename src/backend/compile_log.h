/* What the device backends say when a kernel family does not compile: the first lines of the
 * compiler's log, on the one line of an error message (the whole log goes to the debug log). */
#ifndef CT_COMPILE_LOG_H
#define CT_COMPILE_LOG_H

#include <stddef.h>

/* How many lines of a compile log an error message quotes. */
#define CT_COMPILE_LOG_LINES 4

/* The first CT_COMPILE_LOG_LINES non-empty lines of log, joined by " | ", into buf; when there
 * are none, "(the <what> log is empty)" ("compile", "build"). */
void ct_compile_log_first_lines(const char *log, const char *what, char *buf, size_t size);

#endif
