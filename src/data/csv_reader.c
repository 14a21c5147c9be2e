/* Reading a dataset from a CSV file, plain or gzip-compressed (zlib reads both), one sample per
 * line: numbers separated by commas, one column holding the label. Every problem is reported
 * with the file, the line and the column (both counted from 1, as editors do). */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/files.h"
#include "data/data_internal.h"
#include "tensor/tensor_internal.h"

#define FN "ct_csv_dataset_load"
#define LABEL_LIMIT 2147483647.0
#define CHUNK_BYTES (1u << 16)

ct_csv_options ct_csv_options_default(void)
{
    ct_csv_options options = {.label_column = -1, .has_header = false, .feature_scale = 1.0};
    return options;
}

typedef struct csv_reader {
    const char *path;
    gzFile file;
    char *line; /* the current line, without its end-of-line characters */
    size_t capacity;
    int64_t line_number;
    locale_t c_locale; /* numbers are read as C writes them, whatever the program's locale */
    char *chunk; /* CHUNK_BYTES read ahead: bytes [chunk_begin, chunk_end) are not in a line yet */
    size_t chunk_begin, chunk_end;
    bool ended;
} csv_reader;

/* Reads more of the file into r->chunk. 1: bytes, 0: the end of the file, -1: an error (recorded;
 * a damaged or truncated gzip stream ends here, and zlib says why). */
static int read_chunk(csv_reader *r)
{
    if (r->ended) return 0;
    int got = gzread(r->file, r->chunk, CHUNK_BYTES);
    if (got > 0) {
        r->chunk_begin = 0;
        r->chunk_end = (size_t)got;
        return 1;
    }
    int code = Z_OK;
    const char *message = gzerror(r->file, &code);
    size_t path_length = strlen(r->path);
    if (strncmp(message, r->path, path_length) == 0 && strncmp(message + path_length, ": ", 2) == 0)
        message += path_length + 2; /* zlib starts with the path, which the message has */
    if (got < 0 || code != Z_OK)
        return ct_error(CT_ERR_IO, FN ": %s, line %lld: cannot read: %s", r->path,
                        (long long)r->line_number + 1, code == Z_ERRNO ? strerror(errno) : message), -1;
    r->ended = true;
    return 0;
}

/* The column (from 1) of byte `at` of a line: one more than the commas before it. */
static int64_t column_at(const char *line, size_t at)
{
    int64_t column = 1;
    for (size_t k = 0; k < at; k++) column += line[k] == ',';
    return column;
}

/* Appends n bytes to r->line (length bytes long so far). A NUL byte is an error: the line is text,
 * and a NUL would end it early for every string function after this one. */
static ct_status append(csv_reader *r, size_t *length, const char *bytes, size_t n)
{
    if (r->capacity - *length < n + 1) {
        size_t capacity = r->capacity ? r->capacity : 4096;
        while (capacity - *length < n + 1) capacity *= 2;
        char *line = realloc(r->line, capacity);
        if (!line) return ct_error(CT_ERR_OUT_OF_MEMORY, FN ": %s, line %lld: no host memory for a line "
                                   "of %zu bytes", r->path, (long long)r->line_number + 1, capacity);
        r->line = line;
        r->capacity = capacity;
    }
    memcpy(r->line + *length, bytes, n);
    const char *nul = memchr(r->line + *length, '\0', n);
    *length += n;
    if (nul) {
        size_t at = (size_t)(nul - r->line);
        return ct_error(CT_ERR_INVALID_ARGUMENT, FN ": %s, line %lld, column %lld: a NUL byte (\\x00, "
                        "byte %zu of the line); a CSV file is text, and this looks like a binary or "
                        "damaged file", r->path, (long long)r->line_number + 1,
                        (long long)column_at(r->line, at), at + 1);
    }
    return CT_OK;
}

/* Reads the next line into r->line. 1: a line, 0: the end of the file, -1: an error (recorded). */
static int read_line(csv_reader *r)
{
    size_t length = 0;
    bool any = false;
    if (!r->line && append(r, &length, "", 0) != CT_OK) return -1; /* a buffer for every line */
    for (;;) {
        if (r->chunk_begin == r->chunk_end) {
            int got = read_chunk(r);
            if (got < 0) return -1;
            if (got == 0) break; /* the end: a last line without a newline, or none */
        }
        const char *begin = r->chunk + r->chunk_begin;
        size_t available = r->chunk_end - r->chunk_begin;
        const char *newline = memchr(begin, '\n', available);
        size_t n = newline ? (size_t)(newline - begin) : available;
        any = true;
        if (append(r, &length, begin, n) != CT_OK) return -1;
        r->chunk_begin += n + (newline != NULL);
        if (newline) break;
    }
    if (!any) return 0;
    r->line_number++;
    while (length > 0 && r->line[length - 1] == '\r') length--;
    r->line[length] = '\0';
    return 1;
}

static bool is_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t') return false;
    return true;
}

static int count_columns(const char *line)
{
    int columns = 1;
    for (; *line; line++) columns += *line == ',';
    return columns;
}

/* The field starting at text, for messages: up to its comma, control bytes escaped (\x01), shortened
 * to fit buf. */
static const char *field_text(const char *text, char *buf, size_t size)
{
    return ct_escape_text(text, strcspn(text, ","), buf, size);
}

/* Parses the number at *cursor and moves past its comma. */
static ct_status parse_number(csv_reader *r, const char **cursor, int column, double *value)
{
    const char *start = *cursor;
    char shown[48];
    char *end;
    errno = 0;
    double v = strtod_l(start, &end, r->c_locale);
    const char *after = end;
    while (*after == ' ' || *after == '\t') after++;
    if (end == start || (*after != ',' && *after != '\0')) {
        if (strspn(start, " \t") >= strcspn(start, ",")) /* only blanks up to its comma */
            return ct_error(CT_ERR_INVALID_ARGUMENT, FN ": %s, line %lld, column %d: the field is "
                            "empty; every field must be a number", r->path, (long long)r->line_number, column);
        return ct_error(CT_ERR_INVALID_ARGUMENT, FN ": %s, line %lld, column %d: '%s' is not a "
                        "number", r->path, (long long)r->line_number, column, field_text(start, shown, sizeof shown));
    }
    if (!isfinite(v))
        return ct_error(CT_ERR_INVALID_ARGUMENT, FN ": %s, line %lld, column %d: '%s' is not a "
                        "finite number", r->path, (long long)r->line_number, column,
                        field_text(start, shown, sizeof shown));
    *value = v;
    *cursor = *after == ',' ? after + 1 : after;
    return CT_OK;
}

/* What the rows read so far hold: features row after row, and the labels. */
typedef struct csv_rows {
    float *features;
    int64_t *labels;
    int64_t count, capacity;
    int64_t columns, num_features, label_column;
    int64_t first_line;
    int64_t largest_label;
} csv_rows;

static ct_status grow(csv_reader *r, csv_rows *rows)
{
    int64_t capacity = rows->capacity ? rows->capacity * 2 : 1024;
    if ((uint64_t)capacity > SIZE_MAX / sizeof(float) / (uint64_t)(rows->num_features + 1))
        return ct_error(CT_ERR_OUT_OF_MEMORY, FN ": %s: too many rows (%lld) to hold", r->path,
                        (long long)rows->count);
    float *features = realloc(rows->features, (size_t)capacity * (size_t)rows->num_features * sizeof(float));
    if (features) rows->features = features;
    int64_t *labels = features ? realloc(rows->labels, (size_t)capacity * sizeof(int64_t)) : NULL;
    if (!labels)
        return ct_error(CT_ERR_OUT_OF_MEMORY, FN ": %s, line %lld: no host memory for %lld rows of "
                        "%lld features", r->path, (long long)r->line_number, (long long)capacity,
                        (long long)rows->num_features);
    rows->labels = labels;
    rows->capacity = capacity;
    return CT_OK;
}

/* The first data row fixes the number of columns and so where the label is. */
static ct_status first_row(csv_reader *r, csv_rows *rows, const ct_csv_options *options)
{
    rows->columns = count_columns(r->line);
    rows->first_line = r->line_number;
    if (rows->columns < 2)
        return ct_error(CT_ERR_INVALID_ARGUMENT, FN ": %s, line %lld: one column; a row needs at "
                        "least one feature and a label, separated by commas", r->path,
                        (long long)r->line_number);
    int64_t label = options->label_column < 0 ? rows->columns + options->label_column : options->label_column;
    if (label < 0 || label >= rows->columns)
        return ct_error(CT_ERR_INDEX, FN ": %s, line %lld: label_column %d is out of range for %lld "
                        "columns (use 0 to %lld, or -1 to -%lld from the end)", r->path,
                        (long long)r->line_number, options->label_column, (long long)rows->columns,
                        (long long)rows->columns - 1, (long long)rows->columns);
    rows->label_column = label;
    rows->num_features = rows->columns - 1;
    return CT_OK;
}

static ct_status parse_row(csv_reader *r, csv_rows *rows, double scale)
{
    int64_t columns = count_columns(r->line);
    if (columns != rows->columns)
        return ct_error(CT_ERR_INVALID_ARGUMENT, FN ": %s, line %lld: %lld columns, but the first "
                        "row (line %lld) has %lld; every row needs the same number", r->path,
                        (long long)r->line_number, (long long)columns, (long long)rows->first_line,
                        (long long)rows->columns);
    if (rows->count == rows->capacity && grow(r, rows) != CT_OK) return ct_last_error();
    float *features = rows->features + rows->count * rows->num_features;
    const char *cursor = r->line;
    for (int64_t c = 0; c < columns; c++) {
        const char *start = cursor;
        double value = 0;
        if (parse_number(r, &cursor, (int)c + 1, &value) != CT_OK) return ct_last_error();
        char shown[48];
        if (c != rows->label_column) {
            double scaled = value * scale;
            if (fabs(scaled) > FLT_MAX)
                return ct_error(CT_ERR_INVALID_ARGUMENT, FN ": %s, line %lld, column %lld: '%s' "
                                "(scaled: %g) is out of float32's range", r->path,
                                (long long)r->line_number, (long long)c + 1,
                                field_text(start, shown, sizeof shown), scaled);
            *features++ = (float)scaled;
            continue;
        }
        if (value < 0 || value != floor(value))
            return ct_error(CT_ERR_INVALID_ARGUMENT, FN ": %s, line %lld, column %lld: the label "
                            "'%s' is not a non-negative integer (labels are class indices 0, 1, ...)",
                            r->path, (long long)r->line_number, (long long)c + 1,
                            field_text(start, shown, sizeof shown));
        if (value > LABEL_LIMIT)
            return ct_error(CT_ERR_INVALID_ARGUMENT, FN ": %s, line %lld, column %lld: the label "
                            "'%s' is larger than %.0f", r->path, (long long)r->line_number,
                            (long long)c + 1, field_text(start, shown, sizeof shown), LABEL_LIMIT);
        rows->labels[rows->count] = (int64_t)value;
        if ((int64_t)value > rows->largest_label) rows->largest_label = (int64_t)value;
    }
    rows->count++;
    return CT_OK;
}

static ct_status read_rows(csv_reader *r, csv_rows *rows, const ct_csv_options *options)
{
    bool header_pending = options->has_header;
    int got;
    while ((got = read_line(r)) == 1) {
        if (is_blank(r->line)) continue;
        if (header_pending) {
            header_pending = false;
            continue;
        }
        if (rows->columns == 0 && first_row(r, rows, options) != CT_OK) return ct_last_error();
        if (parse_row(r, rows, options->feature_scale) != CT_OK) return ct_last_error();
    }
    if (got < 0) return ct_last_error();
    if (rows->count == 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, FN ": %s: no data rows (%s)", r->path,
                        r->line_number == 0 ? "the file is empty"
                        : options->has_header && !header_pending ? "only a header" : "only blank lines");
    return CT_OK;
}

static ct_dataset *to_dataset(csv_rows *rows)
{
    int64_t fshape[2] = {rows->count, rows->num_features}, lshape[1] = {rows->count};
    ct_tensor *features = ct_tensor_alloc(FN, CT_DEVICE_CPU, CT_F32, fshape, 2);
    ct_tensor *labels = features ? ct_tensor_alloc(FN, CT_DEVICE_CPU, CT_I64, lshape, 1) : NULL;
    if (!labels) {
        ct_release(features);
        return NULL;
    }
    memcpy(ct_tensor_handle(features), rows->features, (size_t)(rows->count * rows->num_features) * sizeof(float));
    memcpy(ct_tensor_handle(labels), rows->labels, (size_t)rows->count * sizeof(int64_t));
    return ct_dataset_adopt(features, labels, rows->largest_label + 1);
}

static ct_dataset *load(const char *path, const ct_csv_options *options)
{
    if (!path) return ct_null_argument(FN, "path");
    ct_csv_options defaults = ct_csv_options_default();
    if (!options) options = &defaults;
    if (!isfinite(options->feature_scale))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, FN ": feature_scale is %g; it must be a "
                             "finite number", options->feature_scale);
    csv_reader r = {.path = path};
    int fd = ct_open_regular_file(FN, path, path); /* neither a FIFO's open nor /dev/zero ends */
    if (fd < 0) return NULL;
    r.file = gzdopen(fd, "rb");
    if (!r.file) {
        close(fd);
        return ct_error_null(CT_ERR_IO, FN ": cannot open '%s': no memory for zlib's state", path);
    }
    r.c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    r.chunk = malloc(CHUNK_BYTES);
    ct_dataset *ds = NULL;
    csv_rows rows = {.largest_label = -1};
    if (!r.c_locale || !r.chunk) {
        ct_error(CT_ERR_OUT_OF_MEMORY, FN ": no memory for the C locale or a read buffer");
    } else if (read_rows(&r, &rows, options) == CT_OK) {
        ds = to_dataset(&rows);
    }
    if (r.c_locale) freelocale(r.c_locale);
    gzclose(r.file);
    free(r.chunk);
    free(r.line);
    free(rows.features);
    free(rows.labels);
    return ds;
}

ct_dataset *ct_csv_dataset_load(const char *path, const ct_csv_options *options)
{
    ct_api_enter();
    ct_dataset *ds = load(path, options);
    ct_api_return(NULL);
    return ds;
}
