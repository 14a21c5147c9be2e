/* Reading the command line: options with values, numbers in range, files that exist. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool.h"

bool ct_arg_option(const char *command, int argc, char **argv, int *i, const char *option, const char **value)
{
    const char *arg = argv[*i];
    size_t length = strlen(option);
    if (strncmp(arg, option, length) != 0) return false;
    if (arg[length] == '=') {
        *value = arg + length + 1;
        return true;
    }
    if (arg[length] != '\0') return false;
    if (*i + 1 >= argc) {
        fprintf(stderr, "ctorch %s: %s needs a value\n", command, option);
        *value = NULL;
        return true;
    }
    *value = argv[++*i];
    return true;
}

bool ct_arg_int(const char *command, const char *option, const char *text, long long min, long long max,
                long long *out)
{
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (*text == '\0' || *end != '\0' || errno || value < min || value > max) {
        fprintf(stderr, "ctorch %s: %s '%s' is not an integer from %lld to %lld\n", command, option, text,
                min, max);
        return false;
    }
    *out = value;
    return true;
}

bool ct_arg_uint64(const char *command, const char *option, const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (*text < '0' || *text > '9' || *end != '\0' || errno) {
        fprintf(stderr, "ctorch %s: %s '%s' is not an integer from 0 to %llu\n", command, option, text,
                (unsigned long long)UINT64_MAX);
        return false;
    }
    *out = value;
    return true;
}

bool ct_arg_double(const char *command, const char *option, const char *text, double min, double max,
                   double *out)
{
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (*text == '\0' || *end != '\0' || errno || !isfinite(value) || value <= min || value > max) {
        fprintf(stderr, "ctorch %s: %s '%s' is not a number above %g and at most %g\n", command, option, text,
                min, max);
        return false;
    }
    *out = value;
    return true;
}

bool ct_arg_scale(const char *command, const char *text, double *out)
{
    const char *slash = strchr(text, '/');
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    bool read = *text != '\0' && !errno && (slash ? end == slash : *end == '\0');
    if (read && slash) {
        double divisor = strtod(slash + 1, &end);
        read = slash[1] != '\0' && *end == '\0' && !errno && divisor > 0;
        value = read ? value / divisor : value;
    }
    if (!read || !isfinite(value) || value <= 0) {
        fprintf(stderr, "ctorch %s: --scale '%s' is not a number above 0 or a fraction such as 1/16 (what every "
                "feature is multiplied by)\n", command, text);
        return false;
    }
    *out = value;
    return true;
}

bool ct_arg_readable_file(const char *command, const char *option, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || access(path, R_OK) != 0) {
        fprintf(stderr, "ctorch %s: %s '%s': %s\n", command, option, path, strerror(errno));
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "ctorch %s: %s '%s' is not a file\n", command, option, path);
        return false;
    }
    return true;
}
