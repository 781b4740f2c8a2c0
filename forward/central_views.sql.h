/* central_views.sql.h - the local database's views (storage/views.sql.h)
 * written for PostgreSQL, each with host_id: one central database holds
 * many hosts. Included by central.c only, and run after the mirror tables
 * are made (central_ensure_schema). tests/fleet/views.sh checks
 * that each gives, per host, the local view's rows. The lookup tables
 * they join for names (linux_names_sql) are made just before. */
/* Set on events_full as its comment, last: a schema that has it has this
 * build's views and fixed tables, and central_ensure_schema leaves it be
 * (with every column of the host's tables). Change it with either. */
#define CENTRAL_SCHEMA_MARK "seccheckd central schema 7"

/* The event views below: their rows, then the names of their container
 * (container_names) as the last columns: the names of the container the
 * event's own sandbox runs (its connection's sandbox), never those of
 * another sandbox's container it names (container/container.h). */
#define NAMED_SELECT "SELECT v.*, n.container_name, n.pod_name, n.pod_namespace, n.image FROM (\n"
#define NAMED_JOIN                                                                                              \
    ") AS v LEFT JOIN connections nc ON nc.host_id = v.host_id AND nc.id = v.conn_id\n"                         \
    "LEFT JOIN container_names n ON n.host_id = v.host_id AND n.container_id = v.container_id\n"                \
    "  AND n.sandbox IS NOT DISTINCT FROM nc.sandbox;\n"

static const char central_views_sql[] =
    /* The columns events_full names that schema version 1 lacks: the mirror
     * adds a host's columns, and a version 1 database the daemon never
     * upgraded can still be forwarded, first of all. NULL there, as in an
     * upgraded database's old rows, whose detail holds the whole message. */
    "ALTER TABLE events ADD COLUMN IF NOT EXISTS thread_start_time_ns bigint,\n"
    "  ADD COLUMN IF NOT EXISTS thread_group_start_time_ns bigint,\n"
    "  ADD COLUMN IF NOT EXISTS parent_thread_group_id bigint, ADD COLUMN IF NOT EXISTS is_exec_session bigint;\n"
    /* Replaced whole, so a new build's views take over: CREATE OR REPLACE
     * cannot change a column's type or drop one. Every view here is named,
     * dependants (processes_per_container on execs) first. */
    "DROP VIEW IF EXISTS alerts_full, processes_per_container, execs, files_opened, failed_syscalls, sandbox_drops,\n"
    "  network, containers, events_full, container_names;\n"
    /* Each connection's sandbox and each container_info row's (a host's
     * mirror adds them; a host of an older build has none: NULL). */
    "ALTER TABLE connections ADD COLUMN IF NOT EXISTS sandbox text, ADD COLUMN IF NOT EXISTS sandbox_bound_by text;\n"
    "ALTER TABLE container_info ADD COLUMN IF NOT EXISTS sandbox text;\n"
    /* alerts show's ancestry (query/show_store_pg.c), as the host's
     * (storage/event_indexes.c): each generation's exec and clone found by
     * index, so a forged chain costs what a real one does; partial, only
     * exec, clone and fork-exit rows. */
    "CREATE INDEX IF NOT EXISTS events_execs ON events(host_id, conn_id, thread_group_id, id) WHERE msg_type = 3;\n"
    "CREATE INDEX IF NOT EXISTS events_clones ON events(host_id, conn_id, (detail -> 'created_thread_group_id'), id)\n"
    "  WHERE msg_type = 2;\n"
    "CREATE INDEX IF NOT EXISTS events_fork_exits ON events(host_id, conn_id, result, id)\n"
    "  WHERE msg_type IN (23, 29) AND is_exit = 1;\n"
    /* container_names: each host's newest container_info row of each
     * container (a row replaced on the host, its passwd changed, comes
     * again with a higher id). A container id is only unique per host, so
     * every view joins it on (host_id, container_id) and shows the names
     * runsc's state file gave beside the id: NULL when not looked up. */
    "CREATE VIEW container_names AS\n"
    "SELECT DISTINCT ON (host_id, container_id) host_id, container_id, name AS container_name, pod_name,\n"
    "       pod_namespace, image, image_repository, image_tag, pod_uid, is_sandbox, user_name, state AS lookup,\n"
    "       why AS lookup_why, sandbox\n"
    "FROM container_info ORDER BY host_id, container_id, id DESC;\n"
    /* events_full: the whole message, as the local view rebuilds it with
     * SQLite's json_patch (RFC 7396: a patch's nulls delete keys, objects
     * merge recursively). The rebuilt parts (context_data when sent:
     * is_exec_session is NULL otherwise; exit on exit; sysno), each unless
     * detail has it (a version 1 row has them all; a version 2 row keeps
     * one the columns cannot hold exactly), have top-level keys disjoint
     * from detail's, so a shallow || gives the merge; jsonb_strip_nulls
     * does what the patch does to nulls (a rebuilt credential or exit
     * field the columns lack, a sub-message detail renders as null); it
     * also drops them from objects inside arrays, which json_patch keeps,
     * but the messages' repeated fields are all strings. A detail that is
     * not an object replaces the document, as in json_patch. Zero values
     * come back as the proto's defaults (the columns store them as NULL).
     * Numbers are exact: jsonb holds them as numeric. */
    "CREATE VIEW events_full AS\n"
    "SELECT host_id, id, conn_id, recv_ns, msg_type, type_name, dropped_count, decode_error,\n"
    "       CASE WHEN detail IS NULL OR jsonb_typeof(detail) <> 'object' THEN detail\n"
    "       ELSE jsonb_strip_nulls(\n"
    "         CASE WHEN is_exec_session IS NULL OR detail ? 'context_data' THEN '{}'::jsonb\n"
    "         ELSE jsonb_build_object('context_data', jsonb_build_object(\n"
    "           'time_ns', coalesce(time_ns, 0), 'thread_id', coalesce(thread_id, 0),\n"
    "           'thread_start_time_ns', coalesce(thread_start_time_ns, 0),\n"
    "           'thread_group_id', coalesce(thread_group_id, 0),\n"
    "           'thread_group_start_time_ns', coalesce(thread_group_start_time_ns, 0),\n"
    "           'container_id', coalesce(container_id, ''), 'cwd', coalesce(cwd, ''),\n"
    "           'process_name', coalesce(process_name, ''),\n"
    "           'parent_thread_group_id', coalesce(parent_thread_group_id, 0),\n"
    "           'is_exec_session', is_exec_session <> 0)\n"
    "           || CASE WHEN real_uid IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('credentials',\n"
    "                jsonb_build_object('real_uid', real_uid, 'effective_uid', effective_uid,\n"
    "                  'saved_uid', saved_uid, 'real_gid', real_gid, 'effective_gid', effective_gid,\n"
    "                  'saved_gid', saved_gid)) END) END\n"
    "         || CASE WHEN is_exit = 1 AND NOT detail ? 'exit'\n"
    "                 THEN jsonb_build_object('exit', jsonb_build_object('result', result, 'errorno', errno))\n"
    "                 ELSE '{}'::jsonb END\n"
    "         || CASE WHEN sysno IS NULL OR detail ? 'sysno' THEN '{}'::jsonb\n"
    "                 ELSE jsonb_build_object('sysno', sysno) END)\n"
    "         || jsonb_strip_nulls(detail) END AS message\n"
    "FROM events;\n"
    /* The local view's parent (the latest matching clone) as a join and
     * DISTINCT ON, not a subquery per exec: the central events table has
     * no index on msg_type and time, so a hash join does it in one pass.
     * created_thread_group_id is compared as jsonb, as SQLite compares
     * json_extract's value with +thread_group_id (no affinity): a number
     * equals a number, never a string. */
    "CREATE VIEW execs AS\n"
    NAMED_SELECT
    "SELECT DISTINCT ON (e.host_id, e.id) e.host_id, e.id, e.conn_id, e.time_ns, to_timestamp(e.time_ns / 1e9) AS time,\n"
    "       e.container_id, e.thread_group_id,\n"
    "       coalesce(nullif(e.parent_thread_group_id, 0), p.thread_group_id) AS parent_thread_group_id,\n"
    "       CASE WHEN coalesce(e.parent_thread_group_id, 0) = 0 OR e.parent_thread_group_id = p.thread_group_id\n"
    "            THEN p.process_name END AS parent_name,\n"
    "       e.detail->>'binary_path' AS binary_path, e.detail->'argv' AS argv, e.cwd, e.real_uid,\n"
    /* storage/views.sql.h's 2026 columns, the same values */
    "       CASE WHEN e.detail->'binary_overlayfs_upper' = 'true'::jsonb\n"
    "            THEN CASE WHEN e.detail->'binary_overlayfs_lower' = 'true'::jsonb THEN 'upper+lower' ELSE 'upper' END\n"
    "            WHEN e.detail->'binary_overlayfs_lower' = 'true'::jsonb THEN 'lower'\n"
    "            WHEN jsonb_typeof(e.detail->'binary_ctime') = 'object' THEN 'none' END AS layer,\n"
    "       CASE WHEN e.detail->'binary_in_memfd' = 'true'::jsonb THEN 1\n"
    "            WHEN (jsonb_typeof(e.detail->'binary_size') = 'number' AND (e.detail->>'binary_size')::numeric > 0)\n"
    "              OR (jsonb_typeof(e.detail->'binary_nlink') = 'number' AND (e.detail->>'binary_nlink')::numeric > 0)\n"
    "            THEN 0 END AS in_memfd,\n"
    "       e.is_exec_session AS exec_session,\n"
    "       CASE WHEN jsonb_typeof(e.detail->'pipe_input_proc'->'context_data'->'thread_group_id') = 'number'\n"
    "            THEN (e.detail->'pipe_input_proc'->'context_data'->>'thread_group_id')::numeric::bigint END\n"
    "            AS pipe_input_pid,\n"
    "       e.detail->'pipe_input_proc'->'context_data'->>'process_name' AS pipe_input_name,\n"
    "       CASE WHEN jsonb_typeof(e.detail->'pipe_output_proc'->'context_data'->'thread_group_id') = 'number'\n"
    "            THEN (e.detail->'pipe_output_proc'->'context_data'->>'thread_group_id')::numeric::bigint END\n"
    "            AS pipe_output_pid,\n"
    "       e.detail->'pipe_output_proc'->'context_data'->>'process_name' AS pipe_output_name\n"
    "FROM events e LEFT JOIN events p ON p.host_id = e.host_id AND p.msg_type = 2 AND p.conn_id = e.conn_id AND p.id < e.id\n"
    "  AND p.detail->'created_thread_group_id' = to_jsonb(e.thread_group_id)\n"
    "  AND p.thread_group_id IS DISTINCT FROM e.thread_group_id\n"
    "  AND p.time_ns BETWEEN coalesce(e.thread_group_start_time_ns,\n"
    "        CASE WHEN e.time_ns >= 10000000000 THEN e.time_ns - 10000000000 END) AND e.time_ns\n"
    "WHERE e.msg_type = 3\n"
    "ORDER BY e.host_id, e.id, p.time_ns DESC, p.id DESC\n"
    NAMED_JOIN
    /* The local view's rows, with the names of the container when every
     * exec of the row is of its own sandbox (a row mixing another sandbox's
     * execs of the same id has none). */
    "CREATE VIEW processes_per_container AS\n"
    "SELECT v.host_id, v.container_id, v.binary_path, v.execs, v.first, v.last, n.container_name, n.pod_name,\n"
    "       n.pod_namespace, n.image FROM (\n"
    "SELECT e.host_id, e.container_id, e.detail->>'binary_path' AS binary_path, count(*) AS execs,\n"
    "       to_timestamp(min(e.time_ns) / 1e9) AS first, to_timestamp(max(e.time_ns) / 1e9) AS last,\n"
    "       bool_and(cn.host_id IS NOT NULL AND c.sandbox IS NOT DISTINCT FROM cn.sandbox) AS own\n"
    "FROM events e LEFT JOIN connections c ON c.host_id = e.host_id AND c.id = e.conn_id\n"
    "     LEFT JOIN container_names cn ON cn.host_id = e.host_id AND cn.container_id = e.container_id\n"
    "WHERE e.msg_type = 3 GROUP BY e.host_id, e.container_id, e.detail->>'binary_path'\n"
    ") AS v LEFT JOIN container_names n ON n.host_id = v.host_id AND n.container_id = v.container_id AND v.own;\n"
    /* The local view's rows: per host, container and the sandbox that named
     * it, the names from the host's newest container_info row of the
     * container when that is the sandbox's own, lookup 'foreign' when
     * another sandbox's. */
    "CREATE VIEW containers AS\n"
    "SELECT g.host_id, g.container_id, i.container_name AS name, i.pod_name, i.pod_namespace, i.image,\n"
    "       i.image_repository, i.image_tag, i.is_sandbox, i.user_name,\n"
    "       CASE WHEN i.lookup IS NOT NULL THEN i.lookup WHEN o.container_id IS NOT NULL THEN 'foreign' END AS lookup,\n"
    "       CASE WHEN i.lookup IS NOT NULL THEN i.lookup_why WHEN o.container_id IS NOT NULL\n"
    "            THEN 'named by a sandbox that does not run it (it runs in sandbox ' || o.sandbox || ')' END\n"
    "         AS lookup_why,\n"
    "       to_timestamp(g.first_ns / 1e9) AS first_seen, to_timestamp(g.last_ns / 1e9) AS last_seen, g.events,\n"
    "       g.execs,\n"
    "       (SELECT count(*) FROM alerts a JOIN events ae ON ae.host_id = a.host_id AND ae.id = a.event_id\n"
    "          LEFT JOIN connections ac ON ac.host_id = ae.host_id AND ac.id = ae.conn_id\n"
    "        WHERE a.host_id = g.host_id AND a.container_id = g.container_id\n"
    "          AND ac.sandbox IS NOT DISTINCT FROM g.sandbox) AS alerts,\n"
    "       g.sandbox_dropped, g.sandbox\n"
    "FROM (SELECT x.host_id, x.container_id, c.sandbox, min(x.first_ns) AS first_ns, max(x.last_ns) AS last_ns,\n"
    "             sum(x.events) AS events, sum(x.execs) AS execs, sum(c.sandbox_dropped) AS sandbox_dropped\n"
    "      FROM (SELECT host_id, container_id, conn_id, min(recv_ns) AS first_ns, max(recv_ns) AS last_ns,\n"
    "                   count(*) AS events, sum(CASE WHEN msg_type = 3 THEN 1 ELSE 0 END) AS execs\n"
    "            FROM events WHERE container_id IS NOT NULL GROUP BY host_id, container_id, conn_id) AS x\n"
    "      LEFT JOIN connections c ON c.host_id = x.host_id AND c.id = x.conn_id\n"
    "      GROUP BY x.host_id, x.container_id, c.sandbox) AS g\n"
    "LEFT JOIN container_names i ON i.host_id = g.host_id AND i.container_id = g.container_id\n"
    "  AND i.sandbox IS NOT DISTINCT FROM g.sandbox\n"
    "LEFT JOIN container_names o ON o.host_id = g.host_id AND o.container_id = g.container_id AND o.lookup = 'found'\n"
    "  AND i.container_id IS NULL;\n"
    /* open_flags: the local view's rule, a whole number from 0 to
     * 2^32-1 however written (5, 5.0, 5e0), else NULL. */
    "CREATE VIEW files_opened AS\n"
    NAMED_SELECT
    "SELECT host_id, id, conn_id, time_ns, to_timestamp(time_ns / 1e9) AS time, container_id, process_name,\n"
    "       thread_group_id, CASE sysno WHEN 2 THEN 'open' WHEN 85 THEN 'creat' ELSE 'openat' END AS call,\n"
    "       detail->>'pathname' AS pathname, detail->>'fd_path' AS dir, detail->'flags' AS flags,\n"
    "       (SELECT string_agg(f.name, '|' ORDER BY f.ord) FROM open_flag_names f\n"
    "        WHERE (o.open_flags & f.mask) = f.value) AS flags_text,\n"
    "       detail->'mode' AS mode, result AS fd, errno, (SELECT n.name FROM errno_names n WHERE n.errno = o.errno) AS errno_name\n"
    "FROM (SELECT *, CASE WHEN fv = trunc(fv) AND fv BETWEEN 0 AND 4294967295 THEN fv::bigint END AS open_flags\n"
    "      FROM (SELECT *, CASE WHEN jsonb_typeof(detail->'flags') = 'number' THEN (detail->'flags')::numeric END AS fv\n"
    "            FROM events WHERE msg_type = 7 AND is_exit = 1) AS v) AS o\n"
    NAMED_JOIN
    "CREATE VIEW failed_syscalls AS\n"
    NAMED_SELECT
    "SELECT host_id, id, conn_id, time_ns, to_timestamp(time_ns / 1e9) AS time, container_id, process_name,\n"
    "       type_name, sysno, errno, (SELECT n.name FROM errno_names n WHERE n.errno = e.errno) AS errno_name, result,\n"
    "       detail->>'pathname' AS pathname\n"
    "FROM events e WHERE is_exit = 1 AND errno != 0\n"
    NAMED_JOIN
    "CREATE VIEW sandbox_drops AS\n"
    "SELECT c.host_id, c.id AS conn_id, c.peer_pid, to_timestamp(c.connect_ns / 1e9) AS connected,\n"
    "       to_timestamp(c.close_ns / 1e9) AS closed, c.close_reason, c.messages, c.sandbox_dropped,\n"
    "       round(100.0 * c.sandbox_dropped / greatest(c.messages + c.sandbox_dropped, 1), 3) AS drop_pct,\n"
    "       (SELECT string_agg(DISTINCT e.container_id, ',') FROM events e\n"
    "        WHERE e.host_id = c.host_id AND e.conn_id = c.id AND e.msg_type = 1) AS containers\n"
    "FROM connections c;\n"
    /* Decoded as the local view decodes, byte for byte: bytes past a
     * short address's end read as 0 (family, port, IPv4) or as nothing
     * (IPv6 groups); a Unix path ends at its first NUL, each byte one
     * character (SQLite's char(), so Latin-1). */
    "CREATE VIEW network AS\n"
    NAMED_SELECT
    "SELECT host_id, id, conn_id, time_ns, to_timestamp(time_ns / 1e9) AS time, container_id, process_name,\n"
    "       thread_group_id, lower(substr(type_name, 9)) AS call, is_exit, detail->'fd' AS fd, family,\n"
    "       (SELECT s.name FROM socket_family_names s WHERE s.family = n.family) AS family_name,\n"
    "       CASE family\n"
    "         WHEN 2 THEN get_byte(p, 4) || '.' || get_byte(p, 5) || '.' || get_byte(p, 6) || '.' ||\n"
    "              get_byte(p, 7) || ':' || port\n"
    "         WHEN 10 THEN '[' || (SELECT string_agg(substr(encode(a, 'hex'), 17 + 4 * g, 4), ':' ORDER BY g)\n"
    "              FROM generate_series(0, 7) g) || ']:' || port\n"
    "         WHEN 1 THEN 'unix:' || CASE WHEN length(a) <= 2 THEN '(unnamed)'\n"
    "              ELSE CASE WHEN get_byte(a, 2) = 0 THEN '@' ELSE '' END || convert_from(substr(path, 1,\n"
    "                   coalesce(nullif(position('\\x00'::bytea IN path), 0) - 1, length(path))), 'LATIN1') END\n"
    "       END AS address,\n"
    "       encode(a, 'hex') AS address_hex, result, errno,\n"
    "       (SELECT x.name FROM errno_names x WHERE x.errno = n.errno) AS errno_name\n"
    "FROM (SELECT e.*, get_byte(p, 0) + 256 * get_byte(p, 1) AS family, get_byte(p, 2) * 256 + get_byte(p, 3) AS port,\n"
    "             substr(a, CASE WHEN get_byte(p, 2) = 0 THEN 4 ELSE 3 END) AS path\n"
    "      FROM (SELECT *, a || '\\x0000000000000000'::bytea AS p\n"
    "            FROM (SELECT *, CASE WHEN detail->>'address' ~ '^([0-9a-fA-F]{2})*$'\n"
    "                                 THEN decode(detail->>'address', 'hex') END AS a\n"
    "                  FROM events WHERE msg_type IN (10, 24, 25, 37) AND detail IS NOT NULL) AS d) AS e) AS n\n"
    NAMED_JOIN
    /* alerts_full: each alert with what its event says, as the local view
     * (storage/alerts.sql.h); time as a timestamp. */
    "CREATE VIEW alerts_full AS\n"
    "SELECT a.host_id, a.id, a.event_id, a.rule, a.priority, a.time_ns, to_timestamp(a.time_ns / 1e9) AS time,\n"
    "       a.container_id, a.output, a.output_fields, a.tags, a.suppressed, e.conn_id, e.type_name, e.thread_id,\n"
    "       e.thread_group_id, e.process_name, e.cwd, e.effective_uid, f.message, n.container_name, n.pod_name,\n"
    "       n.pod_namespace, n.image\n"
    "FROM alerts a JOIN events e ON e.host_id = a.host_id AND e.id = a.event_id\n"
    "     JOIN events_full f ON f.host_id = a.host_id AND f.id = a.event_id\n"
    "     LEFT JOIN connections nc ON nc.host_id = e.host_id AND nc.id = e.conn_id\n"
    "     LEFT JOIN container_names n ON n.host_id = a.host_id AND n.container_id = a.container_id\n"
    "       AND n.sandbox IS NOT DISTINCT FROM nc.sandbox;\n"
    "COMMENT ON VIEW events_full IS '" CENTRAL_SCHEMA_MARK "';\n";
