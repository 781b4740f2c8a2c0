/* server.h - the event loop that owns the listener, the connections and the
 * pipeline: accept, handshake, drain every socket, flush on a timer, stop
 * cleanly on SIGINT/SIGTERM. */
#ifndef SECCHECKD_SERVER_H
#define SECCHECKD_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <uv.h>

#include "conn.h"
#include "decode.h"
#include "handoff.h"
#include "ingest.h"
#include "listener.h"
#include "metrics.h"
#include "pipeline.h"
#include "recv_ring.h"
#include "relay.h"
#include "restart_check.h"
#include "stall_meter.h"
#include "sink.h"

#define SERVER_MAX_ALLOWED_UIDS 64

struct server;

/* Every limit in one place; defaults in server_config_defaults(). */
struct server_config {
    const char *socket_path;
    mode_t socket_mode;
    long long socket_gid;           /* -1: leave the group as created */
    uid_t allowed_uids[SERVER_MAX_ALLOWED_UIDS];
    unsigned allowed_uids_count;    /* 0: any peer may connect */
    size_t max_message;             /* largest packet accepted whole */
    unsigned max_connections;
    unsigned handshake_timeout_ms;
    unsigned read_budget;           /* packets per connection per loop turn */
    unsigned recv_batch;            /* packets per recvmmsg call */
    unsigned flush_ms;              /* longest an event waits in an open batch */
    unsigned drain_timeout_ms;      /* how long shutdown keeps reading */
    bool count_only;                /* count headers, keep nothing (dummy) */
    bool drop_when_full;            /* --on-full drop (else block: pause reading) */
    struct pipeline_config pipeline;
    /* Optional: told about every connection when it closes (seccheck-dummy). */
    void (*on_conn_closed)(const struct conn_record *rec, void *data);
    void *hook_data;
    /* Optional: a connection was handshaken; fd is its socket, for its
     * peer's credentials (main.c: the container lookup). Never blocks. */
    void (*on_conn_ready)(uint64_t conn_id, int fd, void *data);
    void *conn_ready_data;
    /* Optional: SIGHUP asks the owner to reload its settings. */
    void (*on_reload)(struct server *s, void *data);
    void *reload_data;
    const char *metrics_listen;     /* NULL: no metrics endpoint (metrics.h) */
    const char *db_path;            /* the SQLite file, for the size gauges; NULL: none */
    /* What SIGUSR2 runs (main.c): the installed binary and the arguments;
     * NULL: SIGUSR2 is refused. */
    const char *restart_binary;
    char *const *restart_argv;
};

struct server_stats {
    uint64_t connections_total;     /* sandboxes: counted at the handshake, or at the close of one that never made it */
    uint64_t probes;                /* connections closed without a byte (a second daemon's check) */
    uint64_t connections_refused;   /* over --max-connections, or out of descriptors */
    uint64_t connections_refused_no_fd;   /* of those: accept failed with EMFILE/ENFILE */
    uint64_t connections_denied;    /* peer uid not in --allow-uid */
    uint64_t handshake_failures;
    uint64_t sandbox_dropped;       /* of closed connections */
    uint64_t pauses;                /* of closed connections: times paused */
    int64_t paused_ns;              /* and time spent paused */
    uint64_t received_by_type[INGEST_TYPE_SLOTS];   /* ingest counts them (metrics) */
    struct handoff_restarts restarts;   /* over every image of this process (handoff.h) */
    int64_t restart_pause_ns;       /* the restart that started this image: the longest time nothing read */
};

/* SIGUSR2, step by step (server.c): check the build to run, let the
 * writer catch up while a relay starts, then hand over; the first two
 * read on, and from the hand-over the relay reads (relay.h). */
enum restart_phase {
    RESTART_NONE,
    RESTART_CHECKING,      /* restart_check.h */
    RESTART_DRAINING,      /* the writer commits what is queued (checkpointing the WAL); the relay starts */
    RESTART_HANDING_OVER,  /* reading stopped, signals held: the loop winds down to the exec */
};

/* After a restart with a relay: its log first, then the sockets. */
struct relay_intake {
    struct relay_feed *feed;        /* NULL: no relay (any more) */
    struct conn **conns;            /* by handoff index: what its records name; NULL once closed */
    uint32_t nconns;
    bool blocked;                   /* a record waits for batch space (on_space takes up again) */
    int64_t deadline_ns;            /* not caught up by then: the relay is stopped anyway */
    bool deadline_passed;
    uv_idle_t more;                 /* records left after a turn's share */
    bool then_stop;                 /* SIGTERM or SIGINT came meanwhile */
    int64_t handover_ns;            /* the first hand-over's gap: previous image to relay */
};

struct server {
    uv_loop_t *loop;
    struct server_config cfg;
    struct sink *sink;
    struct listener listener;
    uv_poll_t listen_poll;
    uv_timer_t accept_backoff_timer;   /* restarts listen_poll after accept failed */
    int reserve_fd;                 /* given up when out of descriptors (server.c) */
    uv_signal_t sigint, sigterm, sigusr2, sighup;
    struct filter filter;
    uv_timer_t flush_timer, drain_timer, watchdog_timer;
    struct stall_meter stalls;
    struct recv_ring ring;
    struct decoder decoder;
    struct ingest ingest;
    struct pipeline pipeline;
    struct fair_share shares;       /* who holds what the writer has not committed */
    struct conn_env conn_env;
    struct conn *conns;
    unsigned nconns;
    uint64_t next_conn_id;
    bool started;                   /* pipeline running */
    bool stopping;
    bool finished;
    bool flush_pending;             /* a flush put off while the queue was full */
    const struct handoff *inherited;   /* state adopted from the previous image; NULL: a fresh start */
    int64_t resume_stopped_ns;      /* the previous image's last read, until this one reads (monotonic) */
    int64_t resume_exec_ns;         /* when it executed this image */
    enum restart_phase restart;
    struct restart_check *check;    /* while RESTART_CHECKING */
    struct restart_check_result checked;
    bool restart_again;             /* SIGUSR2 during a restart: the new image restarts again */
    uv_timer_t restart_timer;       /* the drain's deadline */
    struct relay_launch *relay;     /* RESTART_DRAINING on: the relay being launched, or ready */
    bool relay_ready;               /* it said so */
    bool relay_waited;              /* the drain's deadline passed once waiting for it */
    struct relay_intake intake;     /* a restart with a relay started this image */
    uv_idle_t settle;               /* handing over: a last loop turn for caught signals */
    int settle_turns;
    int handoff_fd;                 /* >= 0: re-exec with this state after uv_run */
    int fallback_fd;                /* with it: the running image (O_PATH), run if the new one cannot be */
    int64_t drain_deadline_ns;      /* monotonic */
    struct server_stats stats;
    int64_t denied_logged_ns, refused_logged_ns, accept_failed_logged_ns;   /* rate limits */
    struct metrics metrics;         /* the endpoint, when metrics_listen is set */
    uint64_t rules_loaded;          /* rules enabled in the running set (main.c sets it) */
    struct deliver *delivery;       /* --alerts-url (deliver.h), for the metrics; NULL: none */
};

void server_config_defaults(struct server_config *cfg);

/* Binds the socket (first, so a bad path fails before any sink is opened),
 * or takes the one inherited (a restart: handoff_load_from_env filled
 * inherited; it must live until server_start returns). -1 with a message
 * in err. server_free undoes it. */
int server_listen(struct server *s, const struct server_config *cfg, const struct handoff *inherited, char *err,
                  size_t errlen);

/* Starts serving into sink: receive slots, pipeline (and writer thread),
 * loop handles. -1 with a message in err; server_free undoes what was done. */
int server_start(struct server *s, uv_loop_t *loop, struct sink *sink, char *err, size_t errlen);

/* Begins a clean stop (as SIGTERM does): stop accepting, drain, flush. */
void server_stop(struct server *s);

/* Begins a restart (as SIGUSR2 does): check the build to run, let the
 * writer catch up, then stop reading, commit and save the state of every
 * connection; once uv_run returns, s->handoff_fd >= 0 and the caller closes
 * the sink and calls handoff_exec (the running image, s->fallback_fd, when
 * s->checked.runs_current_image). A failed check refuses the restart: this
 * image carries on. */
void server_restart(struct server *s);

/* Replaces the event filter (takes ownership of f's contents). */
void server_set_filter(struct server *s, struct filter *f);

/* After uv_run returned, or after a failed listen/start: releases what they
 * took (not the sink). */
void server_free(struct server *s);

/* received = stored + discarded + rejected + store_failed, and the parts;
 * loop_turns: also the loop's turns and stalls (for developers: --log-level
 * debug; the metrics have them always). */
void server_print_summary(const struct server *s, FILE *out, bool loop_turns);

#endif
