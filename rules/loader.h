/* loader.h - what the rules loader's parts share (rules/load*.c): the items
 * collected from the files as Falco's rule_loader::collector keeps them, the
 * texts built from YAML scalars with the position of every byte, and a
 * keyed hash map. Not an interface of the module: rules.h is.
 *
 * The loader follows falcosecurity/falco's userspace/engine/rule_loader_*.cpp
 * (the version in RULES_FALCO_ENGINE_VERSION):
 *  - load.c reads each item as rule_loader_reader.cpp does and applies it as
 *    rule_loader_collector.cpp does (define, append, selective replace,
 *    enable), numbering every definition and change (index, visibility);
 *  - load_compile.c compiles as rule_loader_compiler.cpp does: lists take
 *    the items of lists defined before them (one level), every condition
 *    sees every list with all its appends (the list's items are spliced into
 *    the condition's text), macros see the macros defined before them, rules
 *    see all of them; exceptions become text appended to the condition;
 *  - load_text.c holds the texts and the splicing;
 *  - load_file.c reads files and directories without ever blocking.
 */
#ifndef SECCHECKD_RULES_LOADER_H
#define SECCHECKD_RULES_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "filter.h"
#include "ruleset.h"
#include "rules.h"
#include "yaml_tree.h"

/* ---- positions ---- */

struct lfile {
    const char *name;
    const char *buf;              /* the text libyaml read (after a UTF-8 BOM) */
    size_t len;
};

/* A node and the file it is in: a position. */
struct lpos {
    const struct lfile *file;
    const struct ynode *node;
};

/* ---- a keyed hash map: (tag, bytes) -> uint32 ----
 *
 * SipHash-1-3 with a random key per process, so a rules file cannot be
 * written to make its own names collide. Keys are not copied: they live
 * as long as the load (YAML nodes, the loader's arena). */
struct lmap_slot {
    const void *tag;              /* NULL: a plain name */
    const char *key;
    uint32_t len;
    uint32_t value;
    uint64_t hash;                /* 0: empty slot */
};

struct lmap {
    struct lmap_slot *slots;
    size_t cap, n;
};

/* The value of (tag, key), or -1. */
long lmap_get(const struct lmap *m, const void *tag, const char *key, size_t len);
/* Inserts or replaces. 0, or -1 out of memory. */
int lmap_put(struct lmap *m, const void *tag, const char *key, size_t len, uint32_t value);

/* Falco's RGX_IDENTIFIER, ([a-zA-Z]+[a-zA-Z0-9_]*), matched whole: a rule's
 * or a sequence's field names (load.c). */
bool loader_identifier(const char *s, size_t n);
void lmap_free(struct lmap *m);

/* ---- texts: conditions, outputs, descriptions ---- */

/* One scalar (or a part of it) that a text is made of. Appends only add a
 * fragment: the text is joined once, when it is compiled, so a file of
 * many appends costs what its size does. */
struct frag {
    const struct lfile *file;
    const struct ynode *node;
    size_t off, len;              /* of node->value */
    struct frag *next;
};

struct ftext {
    struct frag *head, *tail;
    bool has;
};

/* A run of a built text: copied from a node's value at src, or made by the
 * loader (gen) and reported at the node. */
struct tpiece {
    size_t start;                 /* in the built text */
    const struct lfile *file;
    const struct ynode *node;
    size_t src;
    bool gen;
};

/* A text being built, NUL-terminated, with where each byte came from. */
struct tbuild {
    char *buf;
    size_t len, cap;
    struct tpiece *p;
    size_t np, pcap;
    bool oom;
};

void tb_node(struct tbuild *t, const struct lfile *f, const struct ynode *n, size_t off, size_t len);
void tb_gen(struct tbuild *t, const struct lfile *f, const struct ynode *n, const char *s, size_t len);
static inline void tb_gens(struct tbuild *t, const struct lfile *f, const struct ynode *n, const char *s);
/* Drops the text from byte len on. */
void tb_truncate(struct tbuild *t, size_t len);
/* Removes every occurrence of needle; what is left keeps its positions. */
void tb_remove_all(struct tbuild *t, const char *needle);
void tb_free(struct tbuild *t);
/* Where byte off of the text came from: file, line and column. */
void tb_where(const struct tbuild *t, size_t off, const char **file, unsigned *line, unsigned *col);
/* The fragments of f, one space between two. */
void tb_join(struct tbuild *t, const struct ftext *f);
/* The event types r can match as rule_set_rule_types writes them (a
 * sequence's steps too). */
void rule_types_text(const struct rule *r, char *buf, size_t buflen);

/* Copies in's bytes [from, to) with where each came from. */
void tb_copy_range(struct tbuild *out, const struct tbuild *in, size_t from, size_t to);

/* Line and column of byte `local` of a scalar's value in its file. */
void scalar_pos(const struct lfile *f, const struct ynode *n, size_t local, unsigned *line, unsigned *col);

/* ---- the collected items ---- */

struct litem {
    const struct lfile *file;
    const struct ynode *node;     /* a scalar */
};

struct ivec {
    struct litem *v;
    size_t n, cap;
};

struct llist {
    const char *name;
    size_t name_len;
    struct lpos pos;              /* the item that defined it last */
    uint32_t index, visibility;   /* as Falco's collector numbers them */
    struct ivec raw;              /* the items as written, appends included */
    struct ivec compiled;         /* other lists' items taken in (one level) */
    struct ivec expanded;         /* what a condition gets (load_compile.c) */
    uint64_t nexpanded;           /* saturating: counted before it is built */
    bool needs_quoting_scan;      /* its name holds a character that ends a bare word */
    bool used;
};

enum macro_state { M_NEW, M_BUSY, M_DONE, M_FAILED, M_UNKNOWN_FIELD };

/* A problem found compiling a macro that only matters if a rule uses it:
 * an unknown field or event type (Falco compiles fields only into rules). */
struct deferred {
    char *file;
    unsigned line, column;
    char *message;
    struct deferred *next;
};

struct lmacro {
    const char *name;
    struct lpos pos;
    uint32_t index, visibility;
    struct ftext cond;
    /* compiling */
    struct tbuild text;           /* the condition with the lists spliced in */
    uint32_t *refs;               /* the macros its text names (visible ones) */
    size_t nrefs;
    enum macro_state state;
    const struct cnode *compiled;
    uint32_t depth;               /* of its tree, macros expanded */
    struct deferred *unknown;     /* M_UNKNOWN_FIELD: why */
    const struct lmacro *unknown_from;   /* ...or the macro it uses that has one */
    bool used, reported;
};

struct lexc {
    const char *name;
    struct lpos pos;              /* the exception's mapping */
    struct lpos fields, comps;    /* node NULL: not given */
    struct ivec values;           /* each a scalar or a sequence node */
    /* validated: the comparison of each field (scalar fields: one) */
    const char **comp_text;
    size_t *comp_len;
    const struct ynode **comp_node;   /* NULL: the default */
    size_t ncomps;
    bool fields_list;
};

struct lexcvec {
    struct lexc *v;
    size_t n, cap;
};

struct tagvec {
    const char **v;
    size_t n, cap;
};

struct lrule {
    const char *name;
    struct lpos pos;              /* its first definition's name (where rules check names it) */
    struct lpos cond_pos;
    uint32_t index, visibility;
    const char *source;           /* "" when not given */
    bool unknown_source;
    struct ftext cond, output, desc;
    enum rules_priority priority;
    bool enabled, warn_evttypes, skip_unknown, capture;
    uint32_t capture_duration;
    struct tagvec tags;           /* sorted and made unique when compiled */
    struct lexcvec exc;
    uint32_t exc_gen;             /* the exception names' map entries of this generation count */
    /* compiling: the condition (exceptions appended, lists spliced in) and
     * the output, built before anything is compiled */
    struct tbuild cond_text, out_text;
    bool text_failed;
};

struct lplugin_req {
    struct lpos pos;
    bool met;                     /* an alternative is the container plugin */
    char names[256];              /* "k8saudit (>= 0.1.0), k8saudit-other (>= 0.4.0)" */
};

struct loader {
    struct arena tmp;             /* everything of the load itself */
    struct rule_set *rs;
    struct rules_diag *diag;
    struct llist **lists;
    struct lmacro **macros;
    struct lrule **rules;
    size_t nlists, nmacros, nrules, caplists, capmacros, caprules;
    struct lmap list_names, macro_names, rule_names, exc_names, macro_bodies;
    uint64_t expanded_total;      /* enabled rules' condition nodes, macros expanded (RULES_MAX_EXPANDED_SET) */
    uint32_t next_index;          /* Falco's m_cur_index */
    size_t items;
    bool items_exceeded;
    struct lplugin_req *plugins;
    size_t nplugins, capplugins;
    size_t spaced_lists;          /* lists whose names hold a blank or a delimiter */
    /* compiling */
    const struct tbuild *cur_text;    /* errors at offsets of this text... */
    struct lpos cur_node;             /* ...or at this node */
    struct lmacro *cur_macro;         /* compiling this macro */
    uint32_t visible;                 /* macros whose index is below this are visible */
    bool scanning;                    /* reading a macro's references only */
    struct filter_owned *scan_owned;  /* what that reading compiled outside the arena */
    uint32_t *scan_refs;
    size_t scan_n, scan_cap;
    bool collecting;                  /* errors go to `deferred`, not to the diagnostics */
    struct deferred *deferred, **deferred_tail;
    bool deferred_other;              /* an error that is not an unknown field */
    const struct lmacro *tainted_by;  /* a macro with an unknown field was used */
    uint64_t spliced;                 /* list items spliced into conditions */
    bool spliced_exceeded;
    struct fieldref *slots;
    size_t nslots, capslots;
    const char *one_item[1];          /* the list callback's answer: the word itself */
    uint32_t one_len[1];
    struct filter_list one_list;
    struct seq_collector *seqc;       /* the `- sequence:` items (sequence_load.c) */
    /* Falco's append_output for this load (rules.h; append_output.h), NULL: none */
    const struct rules_append_output *append;
    bool order_hinted;                /* the load-order hint was said (load.c) */
    bool oom;
};

/* ---- diagnostics ---- */

void error_at(struct loader *L, struct lpos at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void warn_at(struct loader *L, struct lpos at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline struct lpos at_node(const struct lfile *f, const struct ynode *n) { return (struct lpos){f, n}; }

/* ---- reading an item's keys as Falco's reader does (load.c) ---- */

/* The scalar under key (Falco's decode_val): 0 with *out (NULL when absent
 * and optional), or -1 after the error. */
int loader_scalar(struct loader *L, const struct lfile *f, const struct ynode *item, const struct ynode *at,
                  const char *key, bool optional, const struct ynode **out);
/* An optional bool as yaml-cpp reads one: 0 (*present: given), or -1. */
int loader_bool(struct loader *L, const struct lfile *f, const struct ynode *item, const char *key, bool *out,
                bool *present);
/* "Unknown key 'x'. The key will be ignored." for keys not in known. */
void loader_warn_unknown_keys(struct loader *L, const struct lfile *f, const struct ynode *item,
                              const char *const *known);

/* ---- small utilities ---- */

void *tmp_alloc(struct loader *L, size_t n);
/* Appends to a malloc'd vector (doubling). 0, or -1 with L->oom set. */
int vec_grow(struct loader *L, void *arrp, size_t *cap, size_t n, size_t elem);
int ivec_push(struct loader *L, struct ivec *v, const struct lfile *f, const struct ynode *n);

/* Whether c ends a bare word where Falco looks for a list's name in a
 * condition (rule_loader_compiler.cpp resolve_list: blanks and "(),="). */
static inline bool list_delim(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '(' || c == ')' || c == ',' || c == '=';
}

/* ---- files (load_file.c) ---- */

typedef void (*rules_file_fn)(void *ctx, const char *path, const char *buf, size_t len);

/* Hands fn each rules file of path (a regular file, or a directory's *.yaml
 * and *.yml regular files in name order), its bytes in a; every problem
 * (not a regular file, unreadable, too large) goes to diag. Never blocks on
 * a FIFO or a device. */
void rules_read_path(struct arena *a, const char *path, struct rules_diag *diag, rules_file_fn fn, void *ctx);

/* ---- compiling (load_compile.c) ---- */

void compile_all(struct loader *L);

/* For sequences (sequence_load.c), compiled as rules are: text (lists
 * spliced in) into r's condition, event types and directions, every error
 * at its place, owner naming what it belongs to in messages ("sequence
 * 'X', step 'y'"). 0, or -1 after the errors. */
int compile_condition(struct loader *L, const struct tbuild *text, struct lpos at, const char *owner, bool warn_types,
                      struct rule *r);
/* A template's environment: the rule set's arena and value slots, errors at
 * offsets of L->cur_text. */
struct tmpl_env loader_tmpl_env(struct loader *L);

/* ---- splicing lists into a text (load_text.c) ----
 * in's every word that names a list (and every place a name holding a blank
 * matches) becomes the list's expanded items, as Falco's resolve_list does;
 * into out. */
void splice_lists(struct loader *L, const struct tbuild *in, struct tbuild *out);

static inline void tb_gens(struct tbuild *t, const struct lfile *f, const struct ynode *n, const char *s)
{
    size_t len = 0;
    while (s[len])
        len++;
    tb_gen(t, f, n, s, len);
}

#endif
