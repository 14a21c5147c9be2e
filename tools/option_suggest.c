/* The nearest option to a misspelt one: optimal string alignment distance (Levenshtein with
 * swaps of neighbours), over the name before any "=value". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "option_suggest.h"

enum { MAX_NAME = 64 };

/* Edits (insert, delete, replace, swap two neighbours) from a[0..m) to b[0..n). */
static size_t distance(const char *a, size_t m, const char *b, size_t n)
{
    size_t d[MAX_NAME + 1][MAX_NAME + 1];
    for (size_t i = 0; i <= m; i++) d[i][0] = i;
    for (size_t j = 0; j <= n; j++) d[0][j] = j;
    for (size_t i = 1; i <= m; i++) {
        for (size_t j = 1; j <= n; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[m][n];
}

const char *ct_option_nearest(const char *arg, const char *const options[])
{
    size_t m = strcspn(arg, "=");
    if (m > MAX_NAME || strncmp(arg, "--", 2) != 0) return NULL;
    const char *nearest = NULL, *prefix_of = NULL;
    size_t best = (size_t)-1;
    int prefixes = 0;
    for (int k = 0; options[k]; k++) {
        size_t n = strlen(options[k]);
        if (n > MAX_NAME) continue;
        /* "--x" begins every option: a prefix counts from two letters of name on */
        if (m >= 4 && m < n && strncmp(arg, options[k], m) == 0) {
            prefixes++;
            prefix_of = options[k];
        }
        size_t edits = distance(arg, m, options[k], n);
        size_t allowed = (n - 2) / 3 > 0 ? (n - 2) / 3 : 1; /* a third of the name after "--" */
        if (edits <= allowed && edits < best) {
            best = edits;
            nearest = options[k];
        }
    }
    if (nearest) return nearest;
    return prefixes == 1 ? prefix_of : NULL;
}

void ct_option_unknown(const char *command, const char *context, const char *arg, const char *const options[],
                       const char *help)
{
    const char *nearest = ct_option_nearest(arg, options);
    if (nearest) {
        fprintf(stderr, "ctorch %s: unknown option '%s'%s; did you mean %s? (%s)\n", command, arg, context,
                nearest, help);
        return;
    }
    fprintf(stderr, "ctorch %s: unknown option '%s'%s; the options are ", command, arg, context);
    for (int k = 0; options[k]; k++) fprintf(stderr, "%s%s", k ? ", " : "", options[k]);
    fprintf(stderr, " (%s)\n", help);
}
