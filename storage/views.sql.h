/* views.sql.h - SQL views for the common questions, created with the schema.
 * Plain SQL, so they work in the sqlite3 CLI. Socket addresses (bytes, hex
 * in detail) are decoded here: family (u16 LE), port (u16 BE), IPv4/IPv6
 * address, or a Unix path ("@" for the abstract namespace). Numbers get
 * their names from the lookup tables made with them (linux_names.h):
 * errno_names, socket_family_names, open_flag_names.
 *
 * Replaced whole at every start, so a database made by an older build
 * gets this build's views (a view is only its definition: no row moves).
 * forward/central_views.sql.h has each for PostgreSQL.
 * Times are UTC_MS text (sql_time.h), as every seccheckd command writes them. */
#include "sql_time.h"

static const char views_sql[] =
    "DROP VIEW IF EXISTS events_full; DROP VIEW IF EXISTS execs; DROP VIEW IF EXISTS processes_per_container;\n"
    "DROP VIEW IF EXISTS files_opened; DROP VIEW IF EXISTS failed_syscalls; DROP VIEW IF EXISTS sandbox_drops;\n"
    "DROP VIEW IF EXISTS network; DROP VIEW IF EXISTS containers;\n"
    "\n"
    /* The whole message of each decoded event as one JSON document, the
     * one version 1 stored in detail: the parts the columns hold
     * (context_data when sent: is_exec_session is NULL otherwise; exit on
     * exit; sysno), each unless detail has it (a version 1 row has them
     * all; a version 2 row keeps one the columns cannot hold exactly),
     * with detail patched over them. Zero values come back as the proto's
     * defaults (the columns store them as NULL). */
    "CREATE VIEW events_full AS\n"
    "SELECT id, conn_id, recv_ns, msg_type, type_name, dropped_count, decode_error,\n"
    "       CASE WHEN detail IS NOT NULL THEN json_patch(json_patch(json_patch(\n"
    "         CASE WHEN is_exec_session IS NULL OR json_type(detail, '$.context_data') IS NOT NULL THEN '{}'\n"
    "         ELSE json_object('context_data', json_patch(json_object(\n"
    "           'time_ns', coalesce(time_ns, 0), 'thread_id', coalesce(thread_id, 0),\n"
    "           'thread_start_time_ns', coalesce(thread_start_time_ns, 0),\n"
    "           'thread_group_id', coalesce(thread_group_id, 0),\n"
    "           'thread_group_start_time_ns', coalesce(thread_group_start_time_ns, 0),\n"
    "           'container_id', coalesce(container_id, '')),\n"
    "           json_patch(CASE WHEN real_uid IS NULL THEN '{}' ELSE json_object('credentials', json_object(\n"
    "             'real_uid', real_uid, 'effective_uid', effective_uid, 'saved_uid', saved_uid,\n"
    "             'real_gid', real_gid, 'effective_gid', effective_gid, 'saved_gid', saved_gid)) END,\n"
    "           json_object('cwd', coalesce(cwd, ''), 'process_name', coalesce(process_name, ''),\n"
    "             'parent_thread_group_id', coalesce(parent_thread_group_id, 0),\n"
    "             'is_exec_session', json(CASE is_exec_session WHEN 0 THEN 'false' ELSE 'true' END))))) END,\n"
    "         CASE WHEN is_exit = 1 AND json_type(detail, '$.exit') IS NULL\n"
    "              THEN json_object('exit', json_object('result', result, 'errorno', errno)) ELSE '{}' END),\n"
    "         CASE WHEN sysno IS NULL OR json_type(detail, '$.sysno') IS NOT NULL THEN '{}'\n"
    "              ELSE json_object('sysno', sysno) END),\n"
    "         detail) END AS message\n"
    "FROM events;\n"
    "\n"
    /* The parent is the process whose sentry/clone made the exec'ing
     * thread group: the clone's context is the parent's (gVisor emits it
     * before the child runs), created_thread_group_id names the child.
     * Found through events_by_type: clones from the group's start
     * (thread_group_start_time; without it, the 10 s before the exec)
     * to the exec, stored before it (one socket keeps their order), the
     * latest if a pid was reused; not a thread the group made itself. parent_thread_group_id, where the sandbox sends it, is
     * the parent now (after a reparenting): the clone's name is given
     * only when that is the same process. NULL when unknown: no clone
     * point, or not collected (group_id, process_name, time).
     * What gVisor's 2026 releases add, NULL where runsc did not send it:
     * layer (upper, lower, upper+lower; none: a binary in neither, shown
     * by the ctime release-20260721.0 sends with the lower flag), in_memfd
     * (1/0 where binary_size or nlink show release-20260727.0; 1 where the
     * flag itself is true),
     * exec_session (the context's is_exec_session), and the processes at
     * the other ends of stdin and stdout pipes as their contexts name them. */
    "CREATE VIEW execs AS\n"
    "SELECT e.id, e.conn_id, e.time_ns, " UTC_MS("e.time_ns") " AS time, e.container_id,\n"
    "       e.thread_group_id, coalesce(nullif(e.parent_thread_group_id, 0), p.thread_group_id) AS parent_thread_group_id,\n"
    "       CASE WHEN coalesce(e.parent_thread_group_id, 0) = 0 OR e.parent_thread_group_id = p.thread_group_id\n"
    "            THEN p.process_name END AS parent_name,\n"
    "       json_extract(e.detail, '$.binary_path') AS binary_path, json_extract(e.detail, '$.argv') AS argv, e.cwd,\n"
    "       e.real_uid,\n"
    "       CASE WHEN json_type(e.detail, '$.binary_overlayfs_upper') = 'true'\n"
    "            THEN CASE WHEN json_type(e.detail, '$.binary_overlayfs_lower') = 'true' THEN 'upper+lower' ELSE 'upper' END\n"
    "            WHEN json_type(e.detail, '$.binary_overlayfs_lower') = 'true' THEN 'lower'\n"
    "            WHEN json_type(e.detail, '$.binary_ctime') = 'object' THEN 'none' END AS layer,\n"
    "       CASE WHEN json_type(e.detail, '$.binary_in_memfd') = 'true' THEN 1\n"
    "            WHEN (json_type(e.detail, '$.binary_size') IN ('integer', 'real') AND json_extract(e.detail, '$.binary_size') > 0)\n"
    "              OR (json_type(e.detail, '$.binary_nlink') IN ('integer', 'real') AND json_extract(e.detail, '$.binary_nlink') > 0)\n"
    "            THEN 0 END AS in_memfd,\n"
    "       e.is_exec_session AS exec_session,\n"
    "       CASE WHEN json_type(e.detail, '$.pipe_input_proc.context_data.thread_group_id') = 'integer'\n"
    "            THEN json_extract(e.detail, '$.pipe_input_proc.context_data.thread_group_id') END AS pipe_input_pid,\n"
    "       json_extract(e.detail, '$.pipe_input_proc.context_data.process_name') AS pipe_input_name,\n"
    "       CASE WHEN json_type(e.detail, '$.pipe_output_proc.context_data.thread_group_id') = 'integer'\n"
    "            THEN json_extract(e.detail, '$.pipe_output_proc.context_data.thread_group_id') END AS pipe_output_pid,\n"
    "       json_extract(e.detail, '$.pipe_output_proc.context_data.process_name') AS pipe_output_name\n"
    "FROM events e LEFT JOIN events p ON p.id = (\n"
    "  SELECT c.id FROM events c\n"
    "  WHERE c.msg_type = 2 AND c.time_ns BETWEEN coalesce(e.thread_group_start_time_ns,\n"
    "          CASE WHEN e.time_ns >= 10000000000 THEN e.time_ns - 10000000000 END) AND e.time_ns\n"
    "    AND c.conn_id = e.conn_id AND c.id < e.id\n"
    "    AND json_extract(c.detail, '$.created_thread_group_id') = +e.thread_group_id\n"
    "    AND c.thread_group_id IS NOT e.thread_group_id\n"
    "  ORDER BY c.time_ns DESC, c.id DESC LIMIT 1)\n"
    "WHERE e.msg_type = 3;\n"
    "\n"
    "CREATE VIEW processes_per_container AS\n"
    "SELECT container_id, json_extract(detail, '$.binary_path') AS binary_path, count(*) AS execs,\n"
    "       " UTC_MS("min(time_ns)") " AS first, " UTC_MS("max(time_ns)") " AS last\n"
    "FROM events WHERE msg_type = 3 GROUP BY 1, 2;\n"
    "\n"
    /* A container as seccheckd saw it, per sandbox that named it: received
     * first and last, its events, execs and alerts, the drops of the
     * sandbox connections it ran in (shared with the sandbox's other
     * containers), and who it is from runsc's state file (container_info,
     * NULL when not looked up; lookup unknown or refused says why not). A
     * container's names are its own sandbox's (container_info.sandbox =
     * connections.sandbox): a sandbox that names another's container id
     * gets a row of its own, without names, lookup 'foreign'. */
    "CREATE VIEW containers AS\n"
    "SELECT g.container_id, i.name, i.pod_name, i.pod_namespace, i.image, i.image_repository, i.image_tag,\n"
    "       i.is_sandbox, i.user_name,\n"
    "       CASE WHEN i.state IS NOT NULL THEN i.state WHEN o.container_id IS NOT NULL THEN 'foreign' END AS lookup,\n"
    "       CASE WHEN i.state IS NOT NULL THEN i.why WHEN o.container_id IS NOT NULL\n"
    "            THEN 'named by a sandbox that does not run it (it runs in sandbox ' || o.sandbox || ')' END\n"
    "         AS lookup_why,\n"
    "       " UTC_MS("g.first_ns") " AS first_seen, " UTC_MS("g.last_ns") " AS last_seen, g.events, g.execs,\n"
    "       (SELECT count(*) FROM alerts a JOIN events ae ON ae.id = a.event_id\n"
    "          LEFT JOIN connections ac ON ac.id = ae.conn_id\n"
    "        WHERE a.container_id = g.container_id AND ac.sandbox IS g.sandbox) AS alerts,\n"
    "       g.sandbox_dropped, g.sandbox\n"
    "FROM (SELECT x.container_id, c.sandbox, min(x.first_ns) AS first_ns, max(x.last_ns) AS last_ns,\n"
    "             sum(x.events) AS events, sum(x.execs) AS execs, sum(c.sandbox_dropped) AS sandbox_dropped\n"
    "      FROM (SELECT container_id, conn_id, min(recv_ns) AS first_ns, max(recv_ns) AS last_ns, count(*) AS events,\n"
    "                   sum(CASE WHEN msg_type = 3 THEN 1 ELSE 0 END) AS execs\n"
    "            FROM events WHERE container_id IS NOT NULL GROUP BY container_id, conn_id) AS x\n"
    "      LEFT JOIN connections c ON c.id = x.conn_id\n"
    "      GROUP BY x.container_id, c.sandbox) AS g\n"
    "LEFT JOIN container_info i ON i.container_id = g.container_id AND i.sandbox IS g.sandbox\n"
    "LEFT JOIN container_info o ON o.container_id = g.container_id AND o.state = 'found' AND i.container_id IS NULL;\n"
    "\n"
    /* flags_text: the names of the flags, a uint32 in the message: any
     * whole number from 0 to 2^32-1 in detail (5, 5.0, 5e0), else NULL. */
    "CREATE VIEW files_opened AS\n"
    "SELECT id, conn_id, time_ns, " UTC_MS("time_ns") " AS time, container_id, process_name,\n"
    "       thread_group_id, CASE sysno WHEN 2 THEN 'open' WHEN 85 THEN 'creat' ELSE 'openat' END AS call,\n"
    "       json_extract(detail, '$.pathname') AS pathname, json_extract(detail, '$.fd_path') AS dir,\n"
    "       json_extract(detail, '$.flags') AS flags,\n"
    "       (SELECT group_concat(f.name, '|') FROM open_flag_names f WHERE (o.open_flags & f.mask) = f.value) AS flags_text,\n"
    "       json_extract(detail, '$.mode') AS mode, result AS fd, errno,\n"
    "       (SELECT n.name FROM errno_names n WHERE n.errno = o.errno) AS errno_name\n"
    "FROM (SELECT *, CASE WHEN fv = CAST(fv AS INTEGER) AND fv BETWEEN 0 AND 4294967295 THEN CAST(fv AS INTEGER) END\n"
    "                  AS open_flags\n"
    "      FROM (SELECT *, CASE WHEN json_type(detail, '$.flags') IN ('integer', 'real')\n"
    "                           THEN json_extract(detail, '$.flags') END AS fv\n"
    "            FROM events WHERE msg_type = 7 AND is_exit = 1) AS v) AS o;\n"
    "\n"
    "CREATE VIEW failed_syscalls AS\n"
    "SELECT id, conn_id, time_ns, " UTC_MS("time_ns") " AS time, container_id, process_name,\n"
    "       type_name, sysno, errno, (SELECT n.name FROM errno_names n WHERE n.errno = e.errno) AS errno_name, result,\n"
    "       json_extract(detail, '$.pathname') AS pathname\n"
    "FROM events e WHERE is_exit = 1 AND errno != 0;\n"
    "\n"
    "CREATE VIEW sandbox_drops AS\n"
    "SELECT c.id AS conn_id, c.peer_pid, " UTC_MS("c.connect_ns") " AS connected,\n"
    "       " UTC_MS("c.close_ns") " AS closed, c.close_reason, c.messages, c.sandbox_dropped,\n"
    "       round(100.0 * c.sandbox_dropped / max(c.messages + c.sandbox_dropped, 1), 3) AS drop_pct,\n"
    "       (SELECT group_concat(DISTINCT e.container_id) FROM events e WHERE e.conn_id = c.id AND e.msg_type = 1)\n"
    "           AS containers\n"
    "FROM connections c;\n"
    "\n"
    "CREATE VIEW network AS\n"
    "SELECT id, conn_id, time_ns, " UTC_MS("time_ns") " AS time, container_id, process_name,\n"
    "       thread_group_id, lower(substr(type_name, 9)) AS call, is_exit, json_extract(detail, '$.fd') AS fd,\n"
    "       family, (SELECT s.name FROM socket_family_names s WHERE s.family = n.family) AS family_name,\n"
    "       CASE family\n"
    "         WHEN 2 THEN b5 || '.' || b6 || '.' || b7 || '.' || b8 || ':' || port\n"
    "         WHEN 10 THEN '[' || substr(a, 17, 4) || ':' || substr(a, 21, 4) || ':' || substr(a, 25, 4) || ':' ||\n"
    "                      substr(a, 29, 4) || ':' || substr(a, 33, 4) || ':' || substr(a, 37, 4) || ':' ||\n"
    "                      substr(a, 41, 4) || ':' || substr(a, 45, 4) || ']:' || port\n"
    "         WHEN 1 THEN 'unix:' || CASE WHEN length(a) <= 4 THEN '(unnamed)'\n"
    "                                     WHEN substr(a, 5, 2) = '00' THEN '@' || (WITH RECURSIVE c(i, s) AS (SELECT 7, '' UNION ALL\n"
    "                  SELECT i + 2, s || char((instr('0123456789abcdef', substr(a, i, 1)) - 1) * 16 +\n"
    "                                          instr('0123456789abcdef', substr(a, i + 1, 1)) - 1)\n"
    "                  FROM c WHERE i < length(a) AND substr(a, i, 2) != '00')\n"
    "              SELECT s FROM c ORDER BY i DESC LIMIT 1)\n"
    "                                     ELSE (WITH RECURSIVE c(i, s) AS (SELECT 5, '' UNION ALL\n"
    "                  SELECT i + 2, s || char((instr('0123456789abcdef', substr(a, i, 1)) - 1) * 16 +\n"
    "                                          instr('0123456789abcdef', substr(a, i + 1, 1)) - 1)\n"
    "                  FROM c WHERE i < length(a) AND substr(a, i, 2) != '00')\n"
    "              SELECT s FROM c ORDER BY i DESC LIMIT 1) END\n"
    "       END AS address,\n"
    "       a AS address_hex, result, errno, (SELECT x.name FROM errno_names x WHERE x.errno = n.errno) AS errno_name\n"
    "FROM (SELECT e.*,\n"
    "             ((instr('0123456789abcdef', substr(a, 1, 1)) - 1) * 16 + instr('0123456789abcdef', substr(a, 2, 1)) - 1) + 256 * ((instr('0123456789abcdef', substr(a, 3, 1)) - 1) * 16 + instr('0123456789abcdef', substr(a, 4, 1)) - 1) AS family,\n"
    "             ((instr('0123456789abcdef', substr(a, 5, 1)) - 1) * 16 + instr('0123456789abcdef', substr(a, 6, 1)) - 1) * 256 + ((instr('0123456789abcdef', substr(a, 7, 1)) - 1) * 16 + instr('0123456789abcdef', substr(a, 8, 1)) - 1) AS port,\n"
    "             ((instr('0123456789abcdef', substr(a, 9, 1)) - 1) * 16 + instr('0123456789abcdef', substr(a, 10, 1)) - 1) AS b5, ((instr('0123456789abcdef', substr(a, 11, 1)) - 1) * 16 + instr('0123456789abcdef', substr(a, 12, 1)) - 1) AS b6, ((instr('0123456789abcdef', substr(a, 13, 1)) - 1) * 16 + instr('0123456789abcdef', substr(a, 14, 1)) - 1) AS b7, ((instr('0123456789abcdef', substr(a, 15, 1)) - 1) * 16 + instr('0123456789abcdef', substr(a, 16, 1)) - 1) AS b8\n"
    "      FROM (SELECT *, json_extract(detail, '$.address') AS a FROM events\n"
    "            WHERE msg_type IN (10, 24, 25, 37) AND detail IS NOT NULL) AS e) AS n;\n";
