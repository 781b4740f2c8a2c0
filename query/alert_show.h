/* alert_show.h - `seccheckd alerts show ID`: the story of one alert.
 *
 * What Falco's alert alone cannot say, told from what seccheckd stored:
 * the rule, priority, time and output; the event that matched, whole (its
 * `seccheckd events` line, with --json its whole message); the process's
 * ancestry from the container's first process down to it (pid, exec time,
 * program, argv, cwd, uid), built from the stored container start, clone
 * and exec events, so it holds days later and across restarts; the
 * process's own events around the alert's (--before N, --after N), the
 * alert's marked; the other alerts of the container in that window. What
 * is missing (retention deleted it, a point was not enabled) is said, not
 * skipped. From a host's database (--db) or the central copy (--to URL
 * --host-id H); --json gives it all as one document.
 */
#ifndef SECCHECKD_QUERY_ALERT_SHOW_H
#define SECCHECKD_QUERY_ALERT_SHOW_H

/* argv[0] is "show". Exit status: 0 shown, 1 a runtime error or no such
 * alert, 2 usage. */
int alert_show_main(int argc, char **argv);

#endif
