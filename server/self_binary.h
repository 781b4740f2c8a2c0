/* self_binary.h - which binary this process runs.
 *
 * A restart (SIGUSR2) must run the binary installed now, not the image it
 * was started from: after `mv new seccheckd`, /proc/self/exe names the old,
 * deleted inode. So the path is resolved once at start-up (before anything
 * could change the working directory) and the restart executes that path.
 * The GNU build id tells, in the log, which build each image is.
 */
#ifndef SECCHECKD_SELF_BINARY_H
#define SECCHECKD_SELF_BINARY_H

#include <stddef.h>

/* The absolute path the process was started from: argv0 made absolute
 * (symbolic links kept, so a relinked symlink is followed on restart), or,
 * when argv0 holds no '/' (found through PATH), the file /proc/self/exe
 * names. 0, or -1 if neither can be resolved. */
int self_binary_path(const char *argv0, char *out, size_t outlen);

/* The running image's GNU build id in hex ("none" if it has none). */
void self_binary_build_id(char *out, size_t outlen);

#endif
