/* runsc_toml.c - pod-init-config in containerd's runsc.toml (runsc_toml.h).
 *
 * Read line by line as TOML lays out what matters here: a table header
 * `[name]` (`[[name]]` is an array of tables, never runsc_config), a key
 * `name = value` in the current table, a top-level dotted key
 * `runsc_config.name = value`; comments and every other line are passed
 * through untouched. Multi-line strings would let a line look like a header
 * or key that is not one, so a file holding one is refused. */
#include "runsc_toml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic_file.h"

#define TABLE "runsc_config"
#define KEY "pod-init-config"

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* [p, end) trimmed of blanks and of one pair of quotes around it. */
static void trim_name(const char **p, const char **end)
{
    *p = skip_blanks(*p, *end);
    while (*end > *p && ((*end)[-1] == ' ' || (*end)[-1] == '\t'))
        (*end)--;
    if (*end - *p >= 2 && (**p == '"' || **p == '\'') && (*end)[-1] == **p) {
        (*p)++;
        (*end)--;
    }
}

static bool name_is(const char *p, const char *end, const char *want)
{
    return (size_t)(end - p) == strlen(want) && memcmp(p, want, (size_t)(end - p)) == 0;
}

/* The line's table header name in [*name, *name_end); false when it is no header. An array table's name
 * comes back empty. */
static bool table_header(const char *line, const char *end, const char **name, const char **name_end)
{
    const char *p = skip_blanks(line, end);
    if (p == end || *p != '[')
        return false;
    const char *close = memchr(p, ']', (size_t)(end - p));
    if (!close || (p + 1 < end && p[1] == '[')) {
        *name = *name_end = p;
        return true;
    }
    *name = p + 1;
    *name_end = close;
    trim_name(name, name_end);
    return true;
}

/* The line's key and where its value starts; false when it sets no key. */
static bool key_line(const char *line, const char *end, const char **key, const char **key_end, const char **value)
{
    const char *p = skip_blanks(line, end);
    if (p == end || *p == '#')
        return false;
    const char *eq = memchr(p, '=', (size_t)(end - p));
    if (!eq)
        return false;
    *key = p;
    *key_end = eq;
    trim_name(key, key_end);
    *value = skip_blanks(eq + 1, end);
    return true;
}

/* Does the value at [v, end) say path, as a basic or literal string without escapes? */
static bool value_is(const char *v, const char *end, const char *path)
{
    if (v == end || (*v != '"' && *v != '\''))
        return false;
    const char *close = memchr(v + 1, *v, (size_t)(end - v - 1));
    if (!close || (*v == '"' && memchr(v + 1, '\\', (size_t)(close - v - 1))))
        return false;
    return name_is(v + 1, close, path);
}

static bool plain_path(const char *s)
{
    if (s[0] != '/')
        return false;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f || *s == '"' || *s == '\\')
            return false;
    return true;
}

char *runsc_toml_merge(const char *text, size_t len, const char *pod_init_path, bool *changed, char *err,
                       size_t errlen)
{
    *changed = false;
    if (!plain_path(pod_init_path)) {
        snprintf(err, errlen, "the pod-init config's path must be absolute, without quotes, backslashes or control "
                 "characters");
        return NULL;
    }
    if (memchr(text, '\0', len) || (len >= 3 && (strstr(text, "\"\"\"") || strstr(text, "'''")))) {
        snprintf(err, errlen, "it holds a multi-line string or a NUL byte: its lines cannot be read one by one, so "
                 "seccheckd does not edit it (add pod-init-config = \"%s\" to [" TABLE "] yourself)", pod_init_path);
        return NULL;
    }
    const char *end = text + len, *insert_after = NULL;
    bool in_table = false, seen_table = false, any_table = false;
    for (const char *line = text; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *line_end = nl ? nl : end;
        const char *name, *name_end, *value;
        if (table_header(line, line_end, &name, &name_end)) {
            in_table = name_is(name, name_end, TABLE);
            any_table = true;
            if (in_table && !seen_table)
                insert_after = line_end;
            seen_table = seen_table || in_table;
        } else if (key_line(line, line_end, &name, &name_end, &value) &&
                   ((in_table && name_is(name, name_end, KEY)) ||
                    (!any_table && name_is(name, name_end, TABLE "." KEY)))) {
            if (value_is(value, line_end, pod_init_path)) {
                char *same = strndup(text, len);
                if (!same)
                    snprintf(err, errlen, "out of memory");
                return same;
            }
            int vlen = (int)(line_end - value);
            snprintf(err, errlen, "[" TABLE "] already sets " KEY " = %.*s: another trace session (runsc takes one); "
                     "remove that line, or point it at %s, then run this again", vlen > 200 ? 200 : vlen, value,
                     pod_init_path);
            return NULL;
        }
        line = nl ? nl + 1 : end;
    }
    char added[4200];
    int n = insert_after ? snprintf(added, sizeof(added), "\n  " KEY " = \"%s\"", pod_init_path)
                         : snprintf(added, sizeof(added), "%s[" TABLE "]\n  " KEY " = \"%s\"\n",
                                    len == 0 ? "" : text[len - 1] == '\n' ? "\n" : "\n\n", pod_init_path);
    size_t at = insert_after ? (size_t)(insert_after - text) : len;
    char *out = malloc(len + (size_t)n + 1);
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    memcpy(out, text, at);
    memcpy(out + at, added, (size_t)n);
    memcpy(out + at + (size_t)n, text + at, len - at);
    out[len + (size_t)n] = '\0';
    *changed = true;
    return out;
}

int runsc_toml_install(const char *toml_path, const char *pod_init, size_t pod_init_len,
                       struct runsc_toml_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (atomic_file_beside(toml_path, RUNSC_TOML_POD_INIT_NAME, out->toml_path, sizeof(out->toml_path),
                           out->pod_init_path, sizeof(out->pod_init_path), err, errlen) != 0)
        return -1;
    char *text = NULL, why[1024];
    size_t len = 0;
    struct stat st;
    if (atomic_file_read(out->toml_path, RUNSC_TOML_FILE_MAX, &text, &len, &st, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s: %s; nothing changed", out->toml_path, why);
        return -1;
    }
    bool existed = text != NULL;
    char *merged = runsc_toml_merge(text ? text : "", len, out->pod_init_path, &out->changed, why, sizeof(why));
    free(text);
    if (!merged) {
        snprintf(err, errlen, "%s: %s; nothing changed", out->toml_path, why);
        return -1;
    }
    int rc = atomic_file_replace(out->pod_init_path, pod_init, pod_init_len, NULL, err, errlen);
    if (rc == 0 && out->changed)
        rc = atomic_file_replace(out->toml_path, merged, strlen(merged), existed ? &st : NULL, err, errlen);
    free(merged);
    return rc;
}
