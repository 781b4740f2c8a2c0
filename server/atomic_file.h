/* atomic_file.h - an operator's configuration file read with a bound and
 * replaced whole: a temporary file beside it, fsync, rename, the directory
 * fsync'd, its mode and owner kept. For the files gvisor-config changes
 * (Docker's daemon.json, containerd's runsc.toml) and the pod-init configs
 * it writes beside them. */
#ifndef SECCHECKD_ATOMIC_FILE_H
#define SECCHECKD_ATOMIC_FILE_H

#include <stddef.h>
#include <sys/stat.h>

/* path's bytes (NUL-terminated) in *text, its stat in *st; *text NULL and
 * *len 0 when it does not exist. -1 with the reason in err (not a regular
 * file, larger than max, unreadable). */
int atomic_file_read(const char *path, size_t max, char **text, size_t *len, struct stat *st, char *err,
                     size_t errlen);

/* Replaces path by text; the mode, uid and gid of like (NULL: a new file,
 * 0644). -1 with the reason in err (then path is as it was). */
int atomic_file_replace(const char *path, const char *text, size_t len, const struct stat *like, char *err,
                        size_t errlen);

/* Where a file named name goes beside path (symlinks resolved, made
 * absolute: runsc reads it from its own working directory); also path
 * resolved into resolved. -1 with err. */
int atomic_file_beside(const char *path, const char *name, char *resolved, size_t resolved_len, char *beside,
                       size_t beside_len, char *err, size_t errlen);

#endif
