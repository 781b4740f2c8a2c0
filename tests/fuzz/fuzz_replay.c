/* fuzz_replay.c - the regression half of fuzzing: feeds every file of the
 * committed corpus (tests/fuzz/corpus) to the same LLVMFuzzerTestOneInput as
 * the libFuzzer binary, without libFuzzer, so every normal build (gcc, plain
 * and ASan+UBSan) replays what fuzzing once found. ctest: fuzz.regression.
 *
 * usage: fuzz_regression DIR_OR_FILE...
 * Directories are read one level deep, in name order; a violated invariant
 * abort()s, naming the input on stderr first.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_harness.h"

static size_t replayed;

static int replay_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "fuzz_regression: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len, fp)) > 0) {
        len += n;
        if (len == cap) {
            uint8_t *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    int failed = !buf || ferror(fp);
    fclose(fp);
    if (failed) {
        fprintf(stderr, "fuzz_regression: cannot read %s\n", path);
        free(buf);
        return -1;
    }
    /* Named before it runs, so an abort() points at the input. */
    fprintf(stderr, "fuzz_regression: %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    replayed++;
    return 0;
}

static int only_files(const struct dirent *d) { return d->d_name[0] != '.'; }

static int replay_dir(const char *dir)
{
    struct dirent **names;
    int n = scandir(dir, &names, only_files, alphasort);
    if (n < 0) {
        fprintf(stderr, "fuzz_regression: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
        if (rc == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode))
            rc = replay_file(path);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fuzz_regression: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        if ((S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i])) != 0)
            return 1;
    }
    if (replayed == 0) {
        fprintf(stderr, "fuzz_regression: no inputs found\n");
        return 1;
    }
    int rc = fuzz_harness_finish();
    printf("fuzz_regression: %zu inputs replayed, every invariant held\n", replayed);
    return rc;
}
