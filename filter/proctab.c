#include "proctab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gvisor/container.pb-c.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"
#include "siphash.h"

#define SYS_SETPGID_NR 109
#define SYS_SETSID_NR 112

#define SLAB_BITS 10
#define SLAB_SIZE (1u << SLAB_BITS)
#define CLONE_THREAD 0x00010000u

struct pconn {
    uint64_t id;
    uint32_t count;
    uint32_t lru_head, lru_tail;   /* most recently used first */
    uint32_t last_dropped;         /* the dropped_count of the connection's previous event */
    bool used;
};

struct proctab {
    size_t max;
    struct proc **slabs;
    size_t nslabs;
    uint32_t nentries;             /* indices 1..nentries handed out; 0 means none */
    uint32_t free_head;
    uint32_t *buckets;
    uint32_t nbuckets;             /* a power of two */
    struct siphash_key key;        /* the buckets' hash key: secret, so no sandbox can aim its pids at one */
    uint32_t live;
    struct pconn *conns;
    size_t nconns;
    size_t last_conn;
    uint64_t evictions;
    uint64_t string_bytes;
    unsigned keep;                 /* PROC_KEEP_* */
    /* socket slots of processes that are gone, for the next that needs some */
    struct psock **sock_pool;
    uint32_t npool, cappool;
};

static struct proc *at(const struct proctab *pt, uint32_t i)
{
    return &pt->slabs[(i - 1) >> SLAB_BITS][(i - 1) & (SLAB_SIZE - 1)];
}

/* A keyed hash: the pids are the sandbox's choice, and with an unkeyed one
 * (linear over XOR, as this was) it could compute 16,381 thread-group ids
 * sharing one bucket at every table size, each lookup then walking them
 * all (bench/proctab_flood.c). */
static uint32_t bucket_of(const struct proctab *pt, uint64_t conn_id, int32_t tgid)
{
    return (uint32_t)(siphash_2u64(&pt->key, conn_id, (uint32_t)tgid) & (pt->nbuckets - 1));
}

struct proctab *proctab_new(size_t max_processes)
{
    struct proctab *pt = calloc(1, sizeof(*pt));
    if (!pt)
        return NULL;
    pt->max = max_processes ? max_processes : 1;
    if (pt->max > UINT32_MAX - SLAB_SIZE)
        pt->max = UINT32_MAX - SLAB_SIZE;
    pt->nbuckets = 256;
    siphash_key_random(&pt->key);
    pt->buckets = calloc(pt->nbuckets, sizeof(*pt->buckets));
    if (!pt->buckets) {
        free(pt);
        return NULL;
    }
    return pt;
}

static void pstr_free(struct pstr *s) { free(s->data); }

void proctab_free(struct proctab *pt)
{
    if (!pt)
        return;
    for (uint32_t i = 1; i <= pt->nentries; i++) {
        struct proc *p = at(pt, i);
        pstr_free(&p->exepath);
        pstr_free(&p->args);
        pstr_free(&p->cwd);
        pstr_free(&p->exec_file);
        pstr_free(&p->exe);
        pstr_free(&p->env);
        free(p->socks);
        if (p->io)
            for (int k = 0; k < 3; k++)
                pstr_free(&p->io->stream[k].path);
        free(p->io);
    }
    for (uint32_t i = 0; i < pt->npool; i++)
        free(pt->sock_pool[i]);
    free(pt->sock_pool);
    for (size_t s = 0; s < pt->nslabs; s++)
        free(pt->slabs[s]);
    free(pt->slabs);
    free(pt->buckets);
    free(pt->conns);
    free(pt);
}

/* ---- strings ---- */

/* Buffers come in two sizes: small, or the string's cap. Recycled entries
 * meet strings of every length, and with two sizes every buffer soon has
 * the size it will keep, so a steady workload stops allocating. */
#define PSTR_SMALL 64

static size_t pstr_capacity(size_t need, size_t max) { return need <= PSTR_SMALL ? PSTR_SMALL : max + 1; }

/* Replaces s with src[0..len) cut to max bytes; the buffer only grows, so a
 * recycled entry reuses it. On allocation failure s becomes empty. */
static void pstr_set(struct proctab *pt, struct pstr *s, const char *src, size_t len, size_t max)
{
    if (len > max)
        len = max;
    if (len + 1 > s->cap) {
        size_t cap = pstr_capacity(len + 1, max);
        char *n = realloc(s->data, cap);
        if (!n) {
            s->len = 0;
            return;
        }
        pt->string_bytes += cap - s->cap;
        s->data = n;
        s->cap = (uint32_t)cap;
    }
    memcpy(s->data, src, len);
    s->data[len] = '\0';
    s->len = (uint32_t)len;
}

static void pstr_copy(struct proctab *pt, struct pstr *dst, const struct pstr *src, size_t max)
{
    pstr_set(pt, dst, src->len ? src->data : "", src->len, max);
}

/* argv[from..] joined by single spaces, cut to max. */
static void set_joined(struct proctab *pt, struct pstr *s, char *const *argv, size_t argc, size_t from, size_t max)
{
    s->len = 0;
    pstr_set(pt, s, "", 0, max);
    if (s->cap == 0)
        return;
    size_t len = 0;
    for (size_t i = from; i < argc && len < max; i++) {
        const char *a = argv[i] ? argv[i] : "";
        size_t alen = strlen(a);
        size_t need = len + (i > from) + alen;
        if (need > max)
            need = max;
        if (need + 1 > s->cap) {
            size_t cap = pstr_capacity(need + 1, max);
            char *n = realloc(s->data, cap);
            if (!n)
                break;
            pt->string_bytes += cap - s->cap;
            s->data = n;
            s->cap = (uint32_t)cap;
        }
        if (i > from)
            s->data[len++] = ' ';
        size_t take = need - len;
        memcpy(s->data + len, a, take);
        len += take;
    }
    s->data[len] = '\0';
    s->len = (uint32_t)len;
}

/* argv[from..] as proc.args, and their count and length (libs' m_args). */
static void set_args(struct proctab *pt, struct proc *p, char *const *argv, size_t argc, size_t from)
{
    set_joined(pt, &p->args, argv, argc, from, PROC_ARGS_MAX);
    p->nargs = p->lenargs = 0;
    for (size_t i = from; i < argc; i++) {
        p->nargs++;
        size_t n = argv[i] ? strlen(argv[i]) : 0;
        p->lenargs = n > UINT32_MAX - p->lenargs ? UINT32_MAX : p->lenargs + (uint32_t)n;
    }
}

size_t proc_comm_len(const char *s, size_t len)
{
    if (len <= PROC_NAME_MAX)
        return len;
    len = PROC_NAME_MAX;
    /* Back off a cut UTF-8 sequence: continuation bytes are 10xxxxxx. */
    size_t back = len;
    while (back > 0 && ((unsigned char)s[back] & 0xc0) == 0x80)
        back--;
    return back;
}

static void set_name(struct proc *p, const char *s, size_t len)
{
    len = proc_comm_len(s, len);
    memcpy(p->name, s, len);
    p->name[len] = '\0';
}

static const char *base_name(const char *path, size_t *len)
{
    const char *slash = strrchr(path, '/');
    const char *b = slash ? slash + 1 : path;
    *len = strlen(b);
    return b;
}

/* ---- connections ---- */

static struct pconn *get_conn(struct proctab *pt, uint64_t id, bool create, uint32_t *index)
{
    if (pt->last_conn < pt->nconns && pt->conns[pt->last_conn].used && pt->conns[pt->last_conn].id == id) {
        *index = (uint32_t)pt->last_conn;
        return &pt->conns[pt->last_conn];
    }
    size_t hole = pt->nconns;
    for (size_t i = 0; i < pt->nconns; i++) {
        if (pt->conns[i].used && pt->conns[i].id == id) {
            pt->last_conn = i;
            *index = (uint32_t)i;
            return &pt->conns[i];
        }
        if (!pt->conns[i].used && hole == pt->nconns)
            hole = i;
    }
    if (!create)
        return NULL;
    if (hole == pt->nconns) {
        /* Grows in steps of 16: a new sandbox is rare, an event is not. */
        if ((pt->nconns & 15) == 0) {
            struct pconn *n = realloc(pt->conns, (pt->nconns + 16) * sizeof(*n));
            if (!n)
                return NULL;
            pt->conns = n;
        }
        pt->nconns++;
    }
    pt->conns[hole] = (struct pconn){.id = id, .used = true};
    pt->last_conn = hole;
    *index = (uint32_t)hole;
    return &pt->conns[hole];
}

/* ---- LRU and hash ---- */

static void lru_unlink(struct proctab *pt, struct proc *p)
{
    struct pconn *c = &pt->conns[p->conn];
    if (p->lru_prev)
        at(pt, p->lru_prev)->lru_next = p->lru_next;
    else
        c->lru_head = p->lru_next;
    if (p->lru_next)
        at(pt, p->lru_next)->lru_prev = p->lru_prev;
    else
        c->lru_tail = p->lru_prev;
    p->lru_prev = p->lru_next = 0;
}

static void lru_push_front(struct proctab *pt, struct proc *p)
{
    struct pconn *c = &pt->conns[p->conn];
    p->lru_prev = 0;
    p->lru_next = c->lru_head;
    if (c->lru_head)
        at(pt, c->lru_head)->lru_prev = p->self;
    c->lru_head = p->self;
    if (!c->lru_tail)
        c->lru_tail = p->self;
}

static void touch(struct proctab *pt, struct proc *p)
{
    if (pt->conns[p->conn].lru_head == p->self)
        return;
    lru_unlink(pt, p);
    lru_push_front(pt, p);
}

static void hash_unlink(struct proctab *pt, struct proc *p)
{
    uint32_t *link = &pt->buckets[bucket_of(pt, p->conn_id, p->tgid)];
    while (*link && *link != p->self)
        link = &at(pt, *link)->hnext;
    if (*link)
        *link = p->hnext;
    p->hnext = 0;
}

static void hash_insert(struct proctab *pt, struct proc *p)
{
    uint32_t *b = &pt->buckets[bucket_of(pt, p->conn_id, p->tgid)];
    p->hnext = *b;
    *b = p->self;
}

/* Doubles the buckets when entries outnumber them: only while the table grows. */
static void maybe_grow_buckets(struct proctab *pt)
{
    if (pt->live < pt->nbuckets || pt->nbuckets >= (1u << 30))
        return;
    uint32_t *n = calloc((size_t)pt->nbuckets * 2, sizeof(*n));
    if (!n)
        return;
    free(pt->buckets);
    pt->buckets = n;
    pt->nbuckets *= 2;
    for (uint32_t i = 1; i <= pt->nentries; i++) {
        struct proc *p = at(pt, i);
        if (p->live)
            hash_insert(pt, p);
    }
}

static struct proc *find(const struct proctab *pt, uint64_t conn_id, int32_t tgid)
{
    for (uint32_t i = pt->buckets[bucket_of(pt, conn_id, tgid)]; i; i = at(pt, i)->hnext) {
        struct proc *p = at(pt, i);
        if (p->tgid == tgid && p->conn_id == conn_id)
            return p;
    }
    return NULL;
}

static void release(struct proctab *pt, struct proc *p)
{
    hash_unlink(pt, p);
    lru_unlink(pt, p);
    pt->conns[p->conn].count--;
    pt->live--;
    p->live = false;
    p->hnext = pt->free_head;
    pt->free_head = p->self;
}

/* The least recently used entry of the connection holding the most, never
 * one of the two the caller is working with. */
static struct proc *victim(struct proctab *pt, const struct proc *keep1, const struct proc *keep2)
{
    struct proc *best = NULL;
    uint32_t best_count = 0;
    for (size_t c = 0; c < pt->nconns; c++) {
        if (!pt->conns[c].used || pt->conns[c].count <= best_count)
            continue;
        for (uint32_t i = pt->conns[c].lru_tail; i; i = at(pt, i)->lru_prev) {
            struct proc *p = at(pt, i);
            if (p != keep1 && p != keep2) {
                best = p;
                best_count = pt->conns[c].count;
                break;
            }
        }
    }
    return best;
}

static struct proc *alloc_entry(struct proctab *pt, const struct proc *keep1, const struct proc *keep2)
{
    if (pt->live >= pt->max) {
        struct proc *v = victim(pt, keep1, keep2);
        if (!v)
            return NULL;
        release(pt, v);
        pt->evictions++;
    }
    if (pt->free_head) {
        struct proc *p = at(pt, pt->free_head);
        pt->free_head = p->hnext;
        return p;
    }
    uint32_t i = pt->nentries + 1;
    size_t slab = (i - 1) >> SLAB_BITS;
    if (slab >= pt->nslabs) {
        struct proc **ns = realloc(pt->slabs, (slab + 1) * sizeof(*ns));
        if (!ns)
            return NULL;
        pt->slabs = ns;
        ns[slab] = calloc(SLAB_SIZE, sizeof(struct proc));
        if (!ns[slab])
            return NULL;
        pt->nslabs = slab + 1;
    }
    pt->nentries = i;
    struct proc *p = at(pt, i);
    p->self = i;
    return p;
}

/* Forgets everything an entry knew about a previous process, keeping its
 * buffers. */
static void reset(struct proc *p, int64_t start_ns)
{
    p->parent_tgid = 0;
    p->start_ns = start_ns;
    p->parent_start_ns = 0;
    p->has_creds = false;
    p->uid = p->gid = 0;
    p->exec_tid = 0;
    p->name[0] = '\0';
    p->exepath.len = p->args.len = p->cwd.len = p->exec_file.len = 0;
    p->nargs = p->lenargs = 0;
    p->exe.len = p->env.len = 0;
    p->has_env = false;
    p->sid = p->pgid = 0;
    p->nsocks = 0;
    p->own_image = false;
    memset(&p->image, 0, sizeof(p->image));
    if (p->io)
        p->io->has_streams = p->io->has_pipes = false;
}

/* ---- what an exec told of its image ---- */

/* The entry's io block, allocated on first use; NULL out of memory (the
 * facts are then not kept). */
static struct proc_exec_io *io_of(struct proctab *pt, struct proc *p)
{
    if (!p->io) {
        p->io = calloc(1, sizeof(*p->io));
        if (p->io)
            pt->string_bytes += sizeof(*p->io);
    }
    return p->io;
}

/* sec.nsec as ns since the epoch; 0 when it is not a time (negative, nsec
 * out of range, past int64). */
static int64_t timespec_ns(const Gvisor__Common__Timespec *t)
{
    if (!t || t->sec < 0 || t->nsec < 0 || t->nsec >= 1000000000 || t->sec > INT64_MAX / 1000000000 - 1)
        return 0;
    return t->sec * 1000000000 + t->nsec;
}

/* Whether a process with effective ids uid:gid may write a file of that
 * mode and owner: root may; else the owner's bits if it is the owner, else
 * the group's if its group (supplementary groups are not sent), else
 * others'. */
static bool may_write(uint32_t mode, uint32_t owner, uint32_t group, uint32_t uid, uint32_t gid)
{
    if (uid == 0)
        return true;
    if (uid == owner)
        return mode & 0200;
    if (gid == group)
        return mode & 0020;
    return mode & 0002;
}

static void exec_binary_facts(struct proc *p, const Gvisor__Sentry__ExecveInfo *m)
{
    struct proc_image *im = &p->image;
    memset(im, 0, sizeof(*im));
    if (m->binary_mode) {
        im->known |= PROC_IMAGE_MODE;
        if (p->has_creds) {
            im->known |= PROC_IMAGE_WRITABLE;
            im->writable = may_write(m->binary_mode, m->binary_uid, m->binary_gid, p->uid, p->gid);
        }
    }
    if (m->binary_ino) {
        im->known |= PROC_IMAGE_UPPER;
        im->upper = m->binary_overlayfs_upper;
        im->ino = m->binary_ino;
    }
    if (m->binary_ctime) {
        im->known |= PROC_IMAGE_LOWER;
        im->lower = m->binary_overlayfs_lower;
        im->ctime_ns = timespec_ns(m->binary_ctime);
    }
    /* The release that sends the flag sends the size and link count too: a
     * non-zero one shows it, and so does the flag itself when true. */
    if (m->binary_size > 0 || m->binary_nlink > 0 || m->binary_in_memfd) {
        im->known |= PROC_IMAGE_MEMFD;
        im->memfd = m->binary_in_memfd;
    }
}

/* One side of a socket: its IP address and port, when it has them. */
static void socket_side(const Gvisor__Common__SocketIp *ip, uint8_t *addr, uint8_t *addr_len, uint16_t *port)
{
    *addr_len = 0;
    *port = 0;
    if (!ip || (ip->ip.len != 4 && ip->ip.len != 16) || ip->port > 0xffff)
        return;
    memcpy(addr, ip->ip.data, ip->ip.len);
    *addr_len = (uint8_t)ip->ip.len;
    /* gVisor sends sockaddr's port as the integer its network-order bytes
     * make on the sentry's (little-endian) machine */
    *port = (uint16_t)((ip->port & 0xff) << 8 | (ip->port >> 8 & 0xff));
}

static void exec_stream(struct proctab *pt, struct proc_stream *st, const Gvisor__Common__FdInfo *fd)
{
    st->known = fd != NULL;
    st->mode = fd ? fd->mode : 0;
    st->family = 0;
    st->lip_len = st->rip_len = 0;
    st->lport = st->rport = 0;
    st->path.len = 0;
    if (!fd)
        return;
    if (fd->path && fd->path[0])
        pstr_set(pt, &st->path, fd->path, strlen(fd->path), PROC_STREAM_PATH_MAX);
    if (fd->socket) {
        st->family = fd->socket->family <= 255 ? (uint8_t)fd->socket->family : 0;
        socket_side(fd->socket->local, st->lip, &st->lip_len, &st->lport);
        socket_side(fd->socket->remote, st->rip, &st->rip_len, &st->rport);
    }
}

static void exec_peer(struct proc_peer *peer, const Gvisor__Sentry__PipeProcInfo *info)
{
    const Gvisor__Common__ContextData *c = info ? info->context_data : NULL;
    peer->tgid = c && c->thread_group_id > 0 ? c->thread_group_id : 0;
    peer->start_ns = peer->tgid ? c->thread_group_start_time_ns : 0;
}

/* fd_info and pipe_proc_info of sentry/execve. */
static void exec_io(struct proctab *pt, struct proc *p, const Gvisor__Sentry__ExecveInfo *m)
{
    bool streams = m->stdin || m->stdout || m->stderr;
    bool pipes = m->pipe_input_proc || m->pipe_output_proc;
    if (!streams && !pipes) {
        if (p->io)
            p->io->has_streams = p->io->has_pipes = false;
        return;
    }
    struct proc_exec_io *io = io_of(pt, p);
    if (!io)
        return;
    io->has_streams = streams;
    const Gvisor__Common__FdInfo *fds[3] = {m->stdin, m->stdout, m->stderr};
    for (int k = 0; k < 3; k++)
        exec_stream(pt, &io->stream[k], streams ? fds[k] : NULL);
    io->has_pipes = pipes;
    exec_peer(&io->pipe_in, m->pipe_input_proc);
    exec_peer(&io->pipe_out, m->pipe_output_proc);
}

/* A child's copy of its parent's image facts and descriptors. */
static void inherit_exec_facts(struct proctab *pt, struct proc *child, const struct proc *parent)
{
    child->image = parent->image;
    child->own_image = false;
    const struct proc_exec_io *from = parent->io;
    if (!from || (!from->has_streams && !from->has_pipes)) {
        if (child->io)
            child->io->has_streams = child->io->has_pipes = false;
        return;
    }
    struct proc_exec_io *io = io_of(pt, child);
    if (!io)
        return;
    io->has_streams = from->has_streams;
    io->has_pipes = from->has_pipes;
    io->pipe_in = from->pipe_in;
    io->pipe_out = from->pipe_out;
    for (int k = 0; k < 3; k++) {
        struct pstr keep = io->stream[k].path;
        io->stream[k] = from->stream[k];
        io->stream[k].path = keep;
        pstr_copy(pt, &io->stream[k].path, &from->stream[k].path, PROC_STREAM_PATH_MAX);
    }
}

static struct proc *get_or_create(struct proctab *pt, uint32_t conn, uint64_t conn_id, int32_t tgid, int64_t start_ns,
                                  const struct proc *keep, bool *created)
{
    *created = false;
    struct proc *p = find(pt, conn_id, tgid);
    if (p) {
        if (start_ns && p->start_ns && p->start_ns != start_ns) {
            reset(p, start_ns);   /* the id was reused: another process */
            *created = true;
        } else if (start_ns && !p->start_ns) {
            p->start_ns = start_ns;
        }
        touch(pt, p);
        return p;
    }
    p = alloc_entry(pt, keep, NULL);
    if (!p)
        return NULL;
    reset(p, start_ns);
    p->conn_id = conn_id;
    p->conn = conn;
    p->tgid = tgid;
    p->live = true;
    pt->live++;
    pt->conns[conn].count++;
    hash_insert(pt, p);
    lru_push_front(pt, p);
    maybe_grow_buckets(pt);
    *created = true;
    return p;
}

/* ---- applying events ---- */

static bool is_exec_message(uint16_t type) { return type == 3 || type == 11; }

static void from_context(struct proctab *pt, struct proc *p, const Gvisor__Common__ContextData *ctx, uint16_t type)
{
    /* Around an exec the context still names the old image. */
    if (ctx->process_name && ctx->process_name[0] && !is_exec_message(type))
        set_name(p, ctx->process_name, strlen(ctx->process_name));
    if (ctx->cwd && ctx->cwd[0])
        pstr_set(pt, &p->cwd, ctx->cwd, strlen(ctx->cwd), PROC_CWD_MAX);
    if (ctx->credentials) {
        p->has_creds = true;
        p->uid = ctx->credentials->effective_uid;
        p->gid = ctx->credentials->effective_gid;
    }
    if (ctx->parent_thread_group_id > 0 && !p->parent_tgid && ctx->parent_thread_group_id != p->tgid)
        p->parent_tgid = ctx->parent_thread_group_id;
}

/* ---- sockets ---- */

void proctab_keep(struct proctab *pt, unsigned what) { pt->keep = what; }

static struct psock *socket_of(struct proc *p, int64_t fd)
{
    for (unsigned i = 0; i < p->nsocks; i++)
        if (p->socks[i].fd == fd)
            return &p->socks[i];
    return NULL;
}

const struct psock *proctab_socket(const struct proc *p, int64_t fd)
{
    return p && fd >= 0 ? socket_of((struct proc *)p, fd) : NULL;
}

static void forget_socket(struct proc *p, int64_t fd)
{
    struct psock *s = socket_of(p, fd);
    if (!s)
        return;
    size_t i = (size_t)(s - p->socks);
    memmove(s, s + 1, (p->nsocks - i - 1) * sizeof(*s));
    p->nsocks--;
}

/* A process that goes gives its socket slots back: the next process to
 * need some takes them, so a steady workload allocates none. */
static void pool_put(struct proctab *pt, struct proc *p)
{
    if (!p->socks)
        return;
    if (pt->npool == pt->cappool) {
        uint32_t cap = pt->cappool ? pt->cappool * 2 : 16;
        struct psock **n = realloc(pt->sock_pool, cap * sizeof(*n));
        if (!n) {
            free(p->socks);
            pt->string_bytes -= PROC_SOCKETS_MAX * sizeof(*p->socks);
            p->socks = NULL;
            p->nsocks = 0;
            return;
        }
        pt->sock_pool = n;
        pt->cappool = cap;
    }
    pt->sock_pool[pt->npool++] = p->socks;
    p->socks = NULL;
    p->nsocks = 0;
}

static bool has_slots(struct proctab *pt, struct proc *p)
{
    if (p->socks)
        return true;
    if (pt->npool) {
        p->socks = pt->sock_pool[--pt->npool];
        return true;
    }
    p->socks = malloc(PROC_SOCKETS_MAX * sizeof(*p->socks));
    if (!p->socks)
        return false;
    pt->string_bytes += PROC_SOCKETS_MAX * sizeof(*p->socks);
    return true;
}

/* The slot for fd, cleared: its own, a free one, else the oldest (slot 0;
 * the others move down, so the order stays oldest first). NULL when the
 * slots cannot be allocated (the socket goes unremembered). */
static struct psock *remember_socket(struct proctab *pt, struct proc *p, int64_t fd)
{
    if (fd < 0 || fd > INT32_MAX || !has_slots(pt, p))
        return NULL;
    forget_socket(p, fd);
    if (p->nsocks == PROC_SOCKETS_MAX) {
        memmove(p->socks, p->socks + 1, (PROC_SOCKETS_MAX - 1) * sizeof(*p->socks));
        p->nsocks--;
    }
    struct psock *s = &p->socks[p->nsocks++];
    memset(s, 0, sizeof(*s));
    s->fd = (int32_t)fd;
    return s;
}

static void copy_sockets(struct proctab *pt, struct proc *child, const struct proc *parent)
{
    child->nsocks = 0;
    if (!parent->nsocks || !(pt->keep & PROC_KEEP_SOCKETS) || !has_slots(pt, child))
        return;
    memcpy(child->socks, parent->socks, parent->nsocks * sizeof(*child->socks));
    child->nsocks = parent->nsocks;
}

/* A sockaddr as gVisor sends it: the kernel's layout, family first. */
static void set_address(struct psock *s, const ProtobufCBinaryData *a, uint8_t role)
{
    if (!a || a->len < 2)
        return;
    unsigned family = a->data[0] | a->data[1] << 8;
    if (family == 2 && a->len >= 8) {
        s->family = 4;
        memcpy(s->ip, a->data + 4, 4);
    } else if (family == 10 && a->len >= 24) {
        s->family = 6;
        memcpy(s->ip, a->data + 8, 16);
    } else {
        return;
    }
    s->port = (uint16_t)(a->data[2] << 8 | a->data[3]);
    s->role = role;
    if (!s->domain)
        s->domain = family == 2 ? 2 : 10;
}

#define SOCK_TYPE_MASK 0xf
#define CLOEXEC_FLAG 02000000   /* SOCK_CLOEXEC and O_CLOEXEC on x86_64 */

/* What a socket call's exit tells of the process's sockets, and any call
 * that hands out a new fd (its number is no socket any more). */
static void on_fd_event(struct proctab *pt, struct proc *p, const struct event *ev, struct proc_effect *fx)
{
    if (!ev->is_exit)
        return;
    bool ok = ev->errorno == 0;
    const ProtobufCMessage *m = ev->msg;
    struct psock *s;
    switch (ev->header.message_type) {
    case 12: {   /* socket */
        const Gvisor__Syscall__Socket *k = (const Gvisor__Syscall__Socket *)m;
        if (ok && (s = remember_socket(pt, p, ev->result))) {
            s->domain = (uint8_t)k->domain;
            s->type = (uint8_t)(k->type & SOCK_TYPE_MASK);
            s->protocol = (uint16_t)k->protocol;
            s->cloexec = (k->type & CLOEXEC_FLAG) != 0;
        }
        return;
    }
    case 33: {   /* socketpair */
        const Gvisor__Syscall__SocketPair *k = (const Gvisor__Syscall__SocketPair *)m;
        int32_t fds[2] = {k->socket1, k->socket2};
        for (int i = 0; ok && i < 2; i++)
            if ((s = remember_socket(pt, p, fds[i]))) {
                s->domain = (uint8_t)k->domain;
                s->type = (uint8_t)(k->type & SOCK_TYPE_MASK);
                s->protocol = (uint16_t)k->protocol;
                s->cloexec = (k->type & CLOEXEC_FLAG) != 0;
                s->connected = true;
            }
        return;
    }
    case 25: {   /* accept: the new fd is of the listening socket's kind, connected to the peer */
        const Gvisor__Syscall__Accept *k = (const Gvisor__Syscall__Accept *)m;
        if (!ok)
            return;
        const struct psock *l = socket_of(p, k->fd);
        struct psock listening = l ? *l : (struct psock){.type = 1};
        if ((s = remember_socket(pt, p, ev->result))) {
            s->domain = listening.domain;
            s->type = listening.type;
            s->protocol = listening.protocol;
            s->cloexec = (k->flags & CLOEXEC_FLAG) != 0;
            s->connected = true;
            set_address(s, &k->address, PSOCK_REMOTE_CLIENT);
        }
        return;
    }
    case 10: {   /* connect: EINPROGRESS counts, as in libs */
        const Gvisor__Syscall__Connect *k = (const Gvisor__Syscall__Connect *)m;
        if (!ok && ev->errorno != 115)
            return;
        s = socket_of(p, k->fd);
        if (!s && !(s = remember_socket(pt, p, k->fd)))
            return;
        s->connected = true;
        set_address(s, &k->address, PSOCK_REMOTE_SERVER);
        return;
    }
    case 24: {   /* bind */
        const Gvisor__Syscall__Bind *k = (const Gvisor__Syscall__Bind *)m;
        if (ok && ((s = socket_of(p, k->fd)) || (s = remember_socket(pt, p, k->fd))))
            set_address(s, &k->address, PSOCK_LOCAL);
        return;
    }
    case 19: {   /* dup: the new fd is what the old one is */
        const Gvisor__Syscall__Dup *k = (const Gvisor__Syscall__Dup *)m;
        if (!ok)
            return;
        const struct psock *old = socket_of(p, k->old_fd);
        struct psock copy = old ? *old : (struct psock){0};
        forget_socket(p, ev->result);
        if (old && (s = remember_socket(pt, p, ev->result))) {
            *s = copy;
            s->fd = (int32_t)ev->result;
            s->cloexec = (k->flags & CLOEXEC_FLAG) != 0;
        }
        return;
    }
    case 8:      /* close: after the event is evaluated, so its rules still see the socket */
        fx->closed_fd = ((const Gvisor__Syscall__Close *)m)->fd;
        return;
    case 7: case 20: case 22: case 26: case 30:   /* open, signalfd, eventfd, timerfd, inotify: a new fd */
        if (ok)
            forget_socket(p, ev->result);
        return;
    case 17:
        if (ok) {
            forget_socket(p, ((const Gvisor__Syscall__Pipe *)m)->reader);
            forget_socket(p, ((const Gvisor__Syscall__Pipe *)m)->writer);
        }
        return;
    default:
        return;
    }
}

/* An exec closes the close-on-exec fds. */
static void exec_closes(struct proc *p)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < p->nsocks; i++)
        if (!p->socks[i].cloexec)
            p->socks[kept++] = p->socks[i];
    p->nsocks = (uint8_t)kept;
}

/* A new child starts as a copy of its parent, as fork makes it. */
static void inherit(struct proctab *pt, struct proc *child, const struct proc *parent, bool fresh)
{
    child->parent_tgid = parent->tgid;
    child->parent_start_ns = parent->start_ns;
    if (!fresh)
        return;
    memcpy(child->name, parent->name, sizeof(child->name));
    pstr_copy(pt, &child->exepath, &parent->exepath, PROC_EXEPATH_MAX);
    pstr_copy(pt, &child->args, &parent->args, PROC_ARGS_MAX);
    child->nargs = parent->nargs;
    child->lenargs = parent->lenargs;
    pstr_copy(pt, &child->cwd, &parent->cwd, PROC_CWD_MAX);
    pstr_copy(pt, &child->exe, &parent->exe, PROC_EXE_MAX);
    if (parent->has_env && (pt->keep & PROC_KEEP_ENV)) {
        pstr_copy(pt, &child->env, &parent->env, PROC_ENV_MAX);
        child->has_env = true;
    }
    child->has_creds = parent->has_creds;
    child->uid = parent->uid;
    child->gid = parent->gid;
    child->sid = parent->sid;
    child->pgid = parent->pgid;
    copy_sockets(pt, child, parent);
    inherit_exec_facts(pt, child, parent);
}

static void add_child(struct proctab *pt, struct proc *parent, int32_t child_tgid, int64_t start_ns)
{
    if (child_tgid <= 0 || child_tgid == parent->tgid)
        return;   /* a thread of the same process */
    bool created;
    struct proc *child = get_or_create(pt, parent->conn, parent->conn_id, child_tgid, start_ns, parent, &created);
    if (child && (created || !child->parent_tgid))
        inherit(pt, child, parent, created || !child->name[0]);
}

/* path joined to dir when relative, cut to max. */
static void set_path(struct proctab *pt, struct pstr *dst, const char *dir, size_t dirlen, const char *path, size_t max)
{
    size_t plen = strlen(path);
    if (path[0] == '/' || dirlen == 0) {
        pstr_set(pt, dst, path, plen, max);
        return;
    }
    char buf[PROC_CWD_MAX + 1];
    size_t n = dirlen < max ? dirlen : max;
    memcpy(buf, dir, n);
    if (n < max && (n == 0 || buf[n - 1] != '/'))
        buf[n++] = '/';
    size_t take = plen < max - n ? plen : max - n;
    memcpy(buf + n, path, take);
    pstr_set(pt, dst, buf, n + take, max);
}

/* The environment an exec (or container/start) sent: NULL or none sent
 * leaves it unknown (runsc sends execve's envv only when asked). */
static void exec_env(struct proctab *pt, struct proc *p, char *const *env, size_t n)
{
    p->has_env = false;
    p->env.len = 0;
    if (!(pt->keep & PROC_KEEP_ENV) || n == 0)
        return;
    set_joined(pt, &p->env, env, n, 0, PROC_ENV_MAX);
    p->has_env = true;
}

static void exec_image(struct proctab *pt, struct proc *p, const char *exepath, const char *file,
                       char *const *argv, size_t argc)
{
    /* proc.exe is argv[0], as Falco has it; without one, the path run */
    const char *a0 = argc > 0 && argv[0] ? argv[0] : exepath;
    pstr_set(pt, &p->exe, a0, strlen(a0), PROC_EXE_MAX);
    exec_closes(p);
    if (exepath[0] == '/' || !p->cwd.len)
        pstr_set(pt, &p->exepath, exepath, strlen(exepath), PROC_EXEPATH_MAX);
    else
        set_path(pt, &p->exepath, p->cwd.data, p->cwd.len, exepath, PROC_EXEPATH_MAX);
    set_args(pt, p, argv, argc, 1);
    size_t blen;
    const char *b = base_name(file, &blen);
    if (blen)
        set_name(p, b, blen);
    p->exec_file.len = 0;
    /* a new image: what the previous one's exec told is gone (sentry/execve
     * tells it again) */
    p->own_image = true;
    memset(&p->image, 0, sizeof(p->image));
    if (p->io)
        p->io->has_streams = p->io->has_pipes = false;
}

static void on_sentry_execve(struct proctab *pt, struct proc *p, const Gvisor__Sentry__ExecveInfo *m, int32_t tid)
{
    /* comm is the basename of the path given to execve (execfn, else the
     * syscall's enter point), not of the resolved binary (python3, not
     * python3.11). */
    const char *file = m->execfn && m->execfn[0] ? m->execfn
                       : p->exec_file.len       ? p->exec_file.data
                                                : (m->binary_path ? m->binary_path : "");
    char filebuf[PROC_EXEPATH_MAX + 1];
    snprintf(filebuf, sizeof(filebuf), "%s", file);   /* exec_image clears exec_file */
    exec_image(pt, p, m->binary_path ? m->binary_path : "", filebuf, m->argv, m->n_argv);
    exec_env(pt, p, m->env, m->n_env);
    exec_binary_facts(p, m);
    exec_io(pt, p, m);
    p->exec_tid = tid ? tid : -1;
}

static void on_syscall_execve(struct proctab *pt, struct proc *p, const struct event *ev, int32_t tid,
                              struct proc_effect *fx)
{
    const Gvisor__Syscall__Execve *m = (const Gvisor__Syscall__Execve *)ev->msg;
    const char *path = m->pathname ? m->pathname : "";
    if (!ev->is_exit) {
        pstr_set(pt, &p->exec_file, path, strlen(path), PROC_EXEPATH_MAX);
        return;
    }
    if (ev->errorno != 0)
        return;   /* a failed exec changes nothing */
    if (p->exec_tid && (p->exec_tid == -1 || p->exec_tid == tid)) {
        fx->exec_repeat = true;   /* sentry/execve told it already */
        p->exec_tid = 0;
        return;
    }
    exec_image(pt, p, path, path, m->argv, m->n_argv);
    exec_env(pt, p, m->envv, m->n_envv);
}

static void on_chdir(struct proctab *pt, struct proc *p, const struct event *ev)
{
    const Gvisor__Syscall__Chdir *m = (const Gvisor__Syscall__Chdir *)ev->msg;
    if (!ev->is_exit || ev->errorno != 0)
        return;
    if (ev->sysno == SYS_FCHDIR) {
        if (m->fd_path && m->fd_path[0] == '/')
            pstr_set(pt, &p->cwd, m->fd_path, strlen(m->fd_path), PROC_CWD_MAX);
    } else if (m->pathname && m->pathname[0]) {
        char old[PROC_CWD_MAX + 1];
        size_t n = p->cwd.len;
        memcpy(old, p->cwd.len ? p->cwd.data : "", n);
        set_path(pt, &p->cwd, old, n, m->pathname, PROC_CWD_MAX);
    }
}

/* setsid: the process leads a new session and process group. */
static void on_setsid(struct proc *p, const struct event *ev)
{
    if (ev->is_exit && ev->errorno == 0 && ev->sysno == SYS_SETSID_NR)
        p->sid = p->pgid = p->tgid;
}

/* setpgid(pid, pgid), a raw point: pid 0 is the caller, pgid 0 the target's
 * own id. */
static void on_setpgid(struct proctab *pt, struct proc *p, const struct event *ev)
{
    if (!ev->is_exit || ev->errorno != 0 || ev->sysno != SYS_SETPGID_NR)
        return;
    const Gvisor__Syscall__Syscall *m = (const Gvisor__Syscall__Syscall *)ev->msg;
    if (m->arg1 > INT32_MAX || m->arg2 > INT32_MAX)
        return;
    struct proc *target = m->arg1 == 0 || (int32_t)m->arg1 == p->tgid ? p : find(pt, p->conn_id, (int32_t)m->arg1);
    if (target)
        target->pgid = m->arg2 == 0 ? target->tgid : (int32_t)m->arg2;
}

struct proc *proctab_find(struct proctab *pt, const struct proc *of, int32_t tgid)
{
    return of && tgid > 0 ? find(pt, of->conn_id, tgid) : NULL;
}

struct proc *proctab_apply(struct proctab *pt, const struct event *ev, struct proc_effect *fx)
{
    memset(fx, 0, sizeof(*fx));
    fx->closed_fd = -1;
    const Gvisor__Common__ContextData *ctx = ev->context;
    uint16_t type = ev->header.message_type;
    if (!ev->msg || !ctx || ctx->thread_group_id <= 0)
        return NULL;
    uint32_t conn;
    if (!get_conn(pt, ev->conn_id, true, &conn))
        return NULL;
    bool created;
    struct proc *p = get_or_create(pt, conn, ev->conn_id, ctx->thread_group_id, ctx->thread_group_start_time_ns,
                                   NULL, &created);
    if (!p)
        return NULL;
    from_context(pt, p, ctx, type);
    switch (type) {
    case 1: {   /* container/start: the sandbox's first process */
        const Gvisor__Container__Start *m = (const Gvisor__Container__Start *)ev->msg;
        p->parent_tgid = 0;
        if (m->n_args > 0 && m->args[0]) {
            pstr_set(pt, &p->exepath, m->args[0], strlen(m->args[0]), PROC_EXEPATH_MAX);
            size_t blen;
            const char *b = base_name(m->args[0], &blen);
            if (!p->name[0] && blen)
                set_name(p, b, blen);
        }
        set_args(pt, p, m->args, m->n_args, 1);
        if (m->n_args > 0 && m->args[0])
            pstr_set(pt, &p->exe, m->args[0], strlen(m->args[0]), PROC_EXE_MAX);
        exec_env(pt, p, m->env, m->n_env);
        if (m->cwd && m->cwd[0])
            pstr_set(pt, &p->cwd, m->cwd, strlen(m->cwd), PROC_CWD_MAX);
        /* a task with no parent's process group starts a session
         * (gVisor pkg/sentry/kernel/task_start.go) */
        p->sid = p->pgid = p->tgid;
        p->own_image = true;
        return p;
    }
    case 2: {   /* sentry/clone, in the parent's context */
        const Gvisor__Sentry__CloneInfo *m = (const Gvisor__Sentry__CloneInfo *)ev->msg;
        add_child(pt, p, m->created_thread_group_id, m->created_thread_start_time_ns);
        return p;
    }
    case 3:
        on_sentry_execve(pt, p, (const Gvisor__Sentry__ExecveInfo *)ev->msg, ctx->thread_id);
        return p;
    case 5:
        fx->remove_after = ctx->thread_id == 0 || ctx->thread_id == ctx->thread_group_id;
        return p;
    case 11:
        on_syscall_execve(pt, p, ev, ctx->thread_id, fx);
        return p;
    case 13:
        on_chdir(pt, p, ev);
        return p;
    case 14:
        on_setsid(p, ev);
        return p;
    case 6:
        on_setpgid(pt, p, ev);
        return p;
    case 23:    /* clone, fork, vfork exits in the parent: result is the child */
    case 29:
        if (ev->is_exit && ev->errorno == 0 && ev->result > 0 && ev->result <= INT32_MAX) {
            if (type == 23 && (((const Gvisor__Syscall__Clone *)ev->msg)->flags & CLONE_THREAD))
                return p;
            add_child(pt, p, (int32_t)ev->result, 0);
        }
        return p;
    default:
        if (pt->keep & PROC_KEEP_SOCKETS)
            on_fd_event(pt, p, ev, fx);
        return p;
    }
}

void proctab_finish(struct proctab *pt, struct proc *p, const struct proc_effect *fx)
{
    if (p && fx->closed_fd >= 0)
        forget_socket(p, fx->closed_fd);
    if (p && fx->remove_after && p->live)
        pool_put(pt, p);
    if (p && fx->remove_after && p->live)
        release(pt, p);
}

struct proc *proctab_parent(struct proctab *pt, const struct proc *p)
{
    if (!p || p->parent_tgid <= 0 || p->parent_tgid == p->tgid)
        return NULL;
    struct proc *q = find(pt, p->conn_id, p->parent_tgid);
    if (!q || (p->parent_start_ns && q->start_ns && q->start_ns != p->parent_start_ns))
        return NULL;
    return q;
}

struct proc *proctab_lookup(struct proctab *pt, uint64_t conn_id, int32_t tgid, int64_t start_ns)
{
    if (tgid <= 0)
        return NULL;
    struct proc *q = find(pt, conn_id, tgid);
    if (!q || (start_ns && q->start_ns && q->start_ns != start_ns))
        return NULL;
    return q;
}

uint64_t proctab_dropped_growth(struct proctab *pt, uint64_t conn_id, uint32_t dropped)
{
    uint32_t ci;
    struct pconn *c = get_conn(pt, conn_id, dropped != 0, &ci);
    if (!c)
        return dropped;   /* none yet (the count was 0 so far), or no memory to remember it */
    uint64_t grown = dropped > c->last_dropped ? dropped - c->last_dropped : 0;
    c->last_dropped = dropped;
    return grown;
}

void proctab_conn_closed(struct proctab *pt, uint64_t conn_id)
{
    uint32_t ci;
    struct pconn *c = get_conn(pt, conn_id, false, &ci);
    if (!c)
        return;
    while (c->lru_head) {
        struct proc *p = at(pt, c->lru_head);
        pool_put(pt, p);
        release(pt, p);
    }
    c->used = false;
}

size_t proctab_longest_chain(const struct proctab *pt)
{
    size_t longest = 0;
    for (uint32_t b = 0; b < pt->nbuckets; b++) {
        size_t n = 0;
        for (uint32_t i = pt->buckets[b]; i; i = at(pt, i)->hnext)
            n++;
        if (n > longest)
            longest = n;
    }
    return longest;
}

void proctab_get_stats(const struct proctab *pt, struct proctab_stats *out)
{
    out->processes = pt->live;
    out->evictions = pt->evictions;
    out->bytes = (uint64_t)pt->nslabs * SLAB_SIZE * sizeof(struct proc) + (uint64_t)pt->nbuckets * sizeof(uint32_t) +
                 pt->string_bytes + pt->nconns * sizeof(struct pconn);
}
