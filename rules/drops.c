/* drops.c - the syscall event drop monitor per connection (drops.h). */
#include "drops.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "filter.h"
#include "json.h"
#include "rules.h"
#include "strbuf.h"

#define ONE_SECOND_NS 1000000000LL

void drop_monitor_init(struct drop_monitor *m, double threshold, double rate, double burst)
{
    memset(m, 0, sizeof(*m));
    m->threshold = threshold < 0 ? 0 : threshold;
    m->rate = rate > 0 ? rate : 0;
    m->burst = burst < 1 ? 1 : burst;
}

void drop_monitor_free(struct drop_monitor *m)
{
    free(m->entries);
    memset(m, 0, sizeof(*m));
}

/* conn_id 0 (tests, tools) is kept as ~0: 0 marks a free entry. */
static uint64_t key_of(uint64_t conn_id) { return conn_id ? conn_id : UINT64_MAX; }

static size_t home_of(const struct drop_monitor *m, uint64_t key)
{
    return (size_t)(key * 0x9e3779b97f4a7c15ull >> 32) & (m->cap - 1);
}

static size_t slot_of(const struct drop_monitor *m, uint64_t key)
{
    size_t i = home_of(m, key);
    while (m->entries[i].conn_id && m->entries[i].conn_id != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int grow(struct drop_monitor *m)
{
    size_t old_cap = m->cap;
    struct drop_entry *old = m->entries;
    size_t cap = old_cap ? old_cap * 2 : 16;
    struct drop_entry *n = calloc(cap, sizeof(*n));
    if (!n)
        return -1;
    m->entries = n;
    m->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].conn_id)
            m->entries[slot_of(m, old[i].conn_id)] = old[i];
    free(old);
    return 0;
}

static struct drop_entry *entry_of(struct drop_monitor *m, uint64_t conn_id, int64_t now)
{
    uint64_t key = key_of(conn_id);
    if (m->cap) {
        struct drop_entry *e = &m->entries[slot_of(m, key)];
        if (e->conn_id)
            return e;
    }
    if ((m->count + 1) * 2 > m->cap && grow(m) != 0)
        return NULL;
    struct drop_entry *e = &m->entries[slot_of(m, key)];
    *e = (struct drop_entry){.conn_id = key, .next_check_ns = now + ONE_SECOND_NS, .tokens = m->burst,
                             .refilled_ns = now};
    m->count++;
    return e;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* event_drops.cpp's token bucket (libs userspace/libsinsp/token_bucket.cpp:44-68): refilled by
 * the time since the last claim, at most burst; a claim takes one. */
static bool claim(struct drop_monitor *m, struct drop_entry *e, int64_t now)
{
    if (now > e->refilled_ns) {
        e->tokens += (double)(now - e->refilled_ns) * m->rate / 1e9;
        if (e->tokens > m->burst)
            e->tokens = m->burst;
        e->refilled_ns = now;
    }
    if (e->tokens < 1)
        return false;
    e->tokens -= 1;
    return true;
}

bool drop_monitor_event(struct drop_monitor *m, uint64_t conn_id, uint64_t dropped, int64_t now_ns,
                        struct drop_window *out)
{
    struct drop_entry *e = entry_of(m, conn_id, now_ns);
    if (!e)
        return false;
    e->events = sat_add(e->events, 1);
    e->drops = sat_add(e->drops, dropped);
    if (now_ns <= e->next_check_ns)
        return false;
    /* the window closes: n_evts holds the drops too (event_drops.cpp:100) */
    struct drop_window w = {.n_evts = sat_add(e->events, e->drops), .n_drops = e->drops};
    e->events = e->drops = 0;
    e->next_check_ns = now_ns + ONE_SECOND_NS;
    if (!w.n_drops || (double)w.n_drops / (double)w.n_evts <= m->threshold || !claim(m, e, now_ns))
        return false;
    *out = w;
    return true;
}

void drop_monitor_conn_closed(struct drop_monitor *m, uint64_t conn_id)
{
    if (!m->cap)
        return;
    uint64_t key = key_of(conn_id);
    size_t mask = m->cap - 1, hole = slot_of(m, key);
    if (!m->entries[hole].conn_id)
        return;
    m->entries[hole].conn_id = 0;
    m->count--;
    /* backward-shift deletion keeps every other entry reachable */
    for (size_t j = (hole + 1) & mask; m->entries[j].conn_id; j = (j + 1) & mask) {
        size_t home = home_of(m, m->entries[j].conn_id);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->entries[hole] = m->entries[j];
            m->entries[j].conn_id = 0;
            hole = j;
        }
    }
}

/* ---- the alert ---- */

/* One key of the fields: a string, or null. */
static void put_field(struct strbuf *f, const char *key, const char *value)
{
    if (f->len > 1)
        strbuf_putc(f, ',');
    json_render_string(f, key, strlen(key));
    strbuf_putc(f, ':');
    if (value)
        json_render_string(f, value, strlen(value));
    else
        strbuf_puts(f, "null");
}

/* falco_outputs.cpp:216-230: " (" then "key=VALUE" for each field, VALUE
 * its JSON text, separated by spaces, then ")": the fields object's text
 * with its braces off, its keys unquoted, ':' '=' and ',' ' '. */
static void put_text_fields(struct strbuf *t, const struct strbuf *f)
{
    strbuf_puts(t, " (");
    for (size_t i = 1; f->data && i + 1 < f->len; i++) {
        char c = f->data[i];
        if (c != '"') {
            strbuf_putc(t, c == ':' ? '=' : c == ',' ? ' ' : c);
            continue;
        }
        size_t j = i + 1;   /* a key or a string: copied whole */
        while (j < f->len && f->data[j] != '"')
            j += f->data[j] == '\\' ? 2 : 1;
        if (j + 1 < f->len && f->data[j + 1] == ':')
            strbuf_append(t, f->data + i + 1, j - i - 1);
        else
            strbuf_append(t, f->data + i, j + 1 - i);
        i = j;
    }
    strbuf_putc(t, ')');
}

void drop_alert_render(const struct drop_window *w, int64_t time_ns, const char *container,
                       const struct container_record *r, const char *hostname, struct strbuf *text,
                       struct strbuf *fields, struct strbuf *json)
{
    char evts[24], drops[24];
    snprintf(evts, sizeof(evts), "%" PRIu64, w->n_evts);
    snprintf(drops, sizeof(drops), "%" PRIu64, w->n_drops);
    /* gVisor's drops are all its socket buffer's: no category, scratch
     * map, page fault or bug counts, no eBPF. Sorted, as nlohmann's object. */
    static const char *const zero[] = {"n_drops_bug", "n_drops_buffer_clone_fork_exit", "n_drops_buffer_close_exit",
                                       "n_drops_buffer_connect_exit", "n_drops_buffer_dir_file_exit",
                                       "n_drops_buffer_execve_exit", "n_drops_buffer_open_exit",
                                       "n_drops_buffer_other_interest_exit", "n_drops_buffer_proc_exit"};
    strbuf_reset(fields);
    strbuf_putc(fields, '{');
    put_field(fields, "container.id", container);
    put_field(fields, "container.image.repository", r ? r->image_repository : NULL);
    put_field(fields, "container.image.tag", r ? r->image_tag : NULL);
    put_field(fields, "container.name", r ? r->name : NULL);
    put_field(fields, "ebpf_enabled", "0");
    put_field(fields, "k8s.ns.name", r ? r->pod_namespace : NULL);
    put_field(fields, "k8s.pod.name", r ? r->pod_name : NULL);
    put_field(fields, "n_drops", drops);
    for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
        put_field(fields, zero[i], "0");
    put_field(fields, "n_drops_buffer_total", drops);
    put_field(fields, "n_drops_page_faults", "0");
    put_field(fields, "n_drops_scratch_map", "0");
    put_field(fields, "n_evts", evts);
    strbuf_putc(fields, '}');
    strbuf_reset(text);
    fields_format_time(text, time_ns, false);
    strbuf_printf(text, ": %s " RULES_DROP_RULE ". %s system calls dropped in last second.",
                  rules_priority_name(RULES_DEBUG), drops);
    put_text_fields(text, fields);
    strbuf_reset(json);
    rules_alert_json(json, hostname, RULES_DROP_RULE, rules_priority_name(RULES_DEBUG), time_ns,
                     text->data ? text->data : "", text->len, fields->data ? fields->data : "{}", "[]", 0);
}
