/* Regular files only, opened without blocking; untrusted text escaped for messages. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"

const char *ct_file_kind(mode_t mode)
{
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

int ct_open_regular_fd(const char *path, mode_t *mode)
{
    struct stat info;
    *mode = 0;
    if (stat(path, &info) != 0) return -1;
    if (!S_ISREG(info.st_mode)) { /* not even opened */
        *mode = info.st_mode;
        errno = EINVAL;
        return -1;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return -1;
    int flags = fstat(fd, &info) == 0 ? fcntl(fd, F_GETFL) : -1;
    if (flags >= 0 && !S_ISREG(info.st_mode)) { /* replaced since the stat */
        *mode = info.st_mode;
        errno = EINVAL;
        flags = -1;
    }
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int error = errno;
        close(fd);
        errno = error;
        return -1;
    }
    return fd;
}

int ct_open_regular_file(const char *fn, const char *path, const char *shown)
{
    mode_t mode;
    int fd = ct_open_regular_fd(path, &mode);
    if (fd >= 0) return fd;
    char reason[128];
    if (mode)
        ct_error(CT_ERR_IO, "%s: '%s' is %s, not a regular file; only regular files are read", fn, shown,
                 ct_file_kind(mode));
    else
        ct_error(CT_ERR_IO, "%s: cannot open '%s': %s", fn, shown, strerror_r(errno, reason, sizeof reason));
    return -1;
}

const char *ct_path_not_regular(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0 && !S_ISREG(info.st_mode) ? ct_file_kind(info.st_mode) : NULL;
}

/* How many characters byte c takes in a message. */
static size_t shown_width(unsigned char c) { return c < 0x20 || c == 0x7F ? 4 : 1; }

const char *ct_escape_text(const char *bytes, size_t length, char *buf, size_t size)
{
    const unsigned char *s = (const unsigned char *)bytes;
    size_t total = 0;
    for (size_t k = 0; k < length && total < size; k++) total += shown_width(s[k]);
    bool whole = total < size;
    size_t limit = whole ? size - 1 : size - 4; /* room for "..." */
    size_t out = 0, k = 0;
    for (; k < length && out + shown_width(s[k]) <= limit; k++) {
        if (shown_width(s[k]) == 4) out += (size_t)snprintf(buf + out, 5, "\\x%02x", s[k]);
        else buf[out++] = (char)s[k];
    }
    if (!whole) {
        /* not in the middle of a UTF-8 character (at most 3 bytes back): drop its first bytes */
        for (int back = 0; back < 3 && k > 0 && k < length && (s[k] & 0xC0) == 0x80 && s[k - 1] >= 0x80; back++)
            k--, out--;
        memcpy(buf + out, "...", 3);
        out += 3;
    }
    buf[out] = '\0';
    return buf;
}
