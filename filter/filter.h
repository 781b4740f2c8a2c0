/* filter.h - Falco's condition language as current falcosecurity/libs has
 * it: parsing (filter_parse.c, libsinsp's grammar), compiling every value
 * once (numbers, IP networks, glob patterns, regular expressions, lowercased
 * icontains needles, pmatch path parts, sorted in-sets; the types of
 * transformers and of both sides of a check, refused as libsinsp's compiler
 * refuses them), and evaluating the tree on an event without allocating
 * (filter_eval.c).
 *
 * `not` binds tighter than `and`, `and` tighter than `or`; a bare
 * identifier is a macro; values are bare words, '...' or "..." with Falco's
 * escapes (\xHH included); `in`, `intersects` and `pmatch` take a
 * parenthesized list (list names inside it expand to their items) or a list
 * name; string operators take a modifier (`startswith oneof (...)`,
 * `anyof`, `allof`); either side may be a transformer (tolower, toupper,
 * b64, basename, len, join, concat, getopt) and the right side a field in
 * val(...). `<`, `<=`, `>`, `>=` take a number.
 */
#ifndef SECCHECKD_RULES_FILTER_H
#define SECCHECKD_RULES_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "evtype.h"
#include "fields.h"

/* Beyond this many nodes after macro expansion a condition is refused: a
 * rules file must not make one event cost unbounded work. */
#define FILTER_MAX_EXPANDED 100000

enum filter_op {
    OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_CONTAINS, OP_ICONTAINS, OP_BCONTAINS, OP_STARTSWITH,
    OP_BSTARTSWITH, OP_ENDSWITH, OP_GLOB, OP_IGLOB, OP_IN, OP_INTERSECTS, OP_PMATCH, OP_EXISTS, OP_REGEX, OP_COUNT
};

/* A string operator's modifier over a list of values: true when exactly
 * one, at least one, or every value satisfies the operator. */
enum filter_mod { MOD_NONE, MOD_ONEOF, MOD_ANYOF, MOD_ALLOF };

const char *filter_op_name(enum filter_op op);
const char *filter_mod_name(enum filter_mod mod);

/* A number as compared: sign and magnitude cover int64 and uint64 alike. */
struct fnum {
    bool neg;
    uint64_t mag;
};

struct regex;

/* One compiled constant. */
struct operand {
    const char *s;            /* the text, unescaped, NUL-terminated */
    uint32_t len;
    bool has_num, has_bool, has_ip;
    struct fnum num;
    bool b;
    uint8_t ipfam;            /* 4 or 6 */
    uint8_t prefix;           /* network bits; 32 or 128 for a single address */
    uint8_t ip[16];
    const char *lower;        /* icontains, iglob: the value lowercased */
    const uint8_t *bytes;     /* bcontains, bstartswith: the hex decoded */
    uint32_t nbytes;
    const struct regex *re;   /* regex: compiled at load */
    /* pmatch: the value's path parts */
    const char *const *parts;
    const uint32_t *part_lens;
    const bool *part_glob;
    uint32_t nparts;
};

/* A value expression: one side of a check when it is more than a plain
 * field (a transformer, a list of values, val(field)), evaluated into
 * scratch slots of the engine's value cache (filter_eval.c). */
enum fexpr_kind {
    FX_FIELD, FX_CONST, FX_LIST, FX_TOLOWER, FX_TOUPPER, FX_B64, FX_BASENAME, FX_LEN, FX_JOIN, FX_CONCAT, FX_GETOPT
};

struct getopt_spec;

struct fexpr {
    uint8_t kind;             /* enum fexpr_kind */
    uint8_t type;             /* enum ftype of its values */
    bool is_list;
    char selector;            /* getopt(...)[c]: the option whose value it yields; 0: the whole list */
    struct fieldref field;    /* FX_FIELD */
    struct fval value;        /* FX_CONST: the text */
    struct fexpr **args;
    uint32_t nargs;
    uint32_t vals_slot, bytes_slot;   /* scratch slots its results are built in */
    const struct getopt_spec *opts;   /* FX_GETOPT with a constant optstring */
};

struct check {
    struct fieldref field;    /* the left side when it is a plain field */
    const struct fexpr *lhs;  /* else the left side: a transformer */
    const struct fexpr *rhs;  /* the right side when a field or transformer; NULL: the constants below */
    enum filter_op op;
    enum filter_mod mod;
    uint8_t type;             /* the left side's enum ftype */
    bool lhs_list;            /* the left side yields a list (getopt) */
    struct operand *vals;     /* one for binary operators; the list for in/intersects/pmatch and modifiers */
    uint32_t nvals;
    /* in/intersects, and == anyof / != allof: the values sorted, for binary search */
    const struct operand **by_str;
    const struct operand **by_num;
    uint32_t nby_num;
    uint8_t dirs;             /* evt.dir checks: the FILTER_DIR_* bits it is true for */
    int8_t known;             /* evt.num's invariant (it starts at 1): +1 always true, -1 never, 0 depends */
    uint32_t utf8_slot;       /* regex: where a value that is not valid UTF-8 is sanitized */
};

enum cnode_kind { CN_AND, CN_OR, CN_NOT, CN_CHECK, CN_TYPES, CN_MACRO, CN_CONST };

struct cnode {
    enum cnode_kind kind;
    bool const_val;               /* CN_CONST */
    uint32_t n;
    struct cnode **kids;          /* AND, OR: n children; NOT: one */
    struct check *chk;            /* CN_CHECK */
    struct evtype_set *types;     /* CN_TYPES: evt.type is one of these */
    const struct cnode *body;     /* CN_MACRO: the macro's compiled condition (shared) */
    /* what the expanded condition is, computed bottom-up at compile */
    uint64_t size;                /* nodes after macro expansion (saturates) */
    uint32_t macro_depth;
    bool uses_dir, uses_point;
};

/* A list's items as a condition sees them. */
struct filter_list {
    const char *const *items;
    const uint32_t *lens;
    size_t n;
};

/* What a compiled condition owns outside its arena (compiled regular
 * expressions): chained from the rule set, released by filter_owned_free
 * when the rule set goes. */
struct filter_owned;
void filter_owned_free(struct filter_owned *list);

/* What the parser asks of the loader. pos arguments are byte offsets in the
 * text being parsed. */
struct filter_env {
    void *ctx;
    struct arena *arena;          /* the rule set's: compiled nodes live there */
    /* A visible macro by name: its compiled condition; NULL and *failed
     * when it exists but did not compile (already reported); NULL, !*failed
     * when undefined (the callback reports it: it knows why). */
    const struct cnode *(*macro)(void *ctx, const char *name, size_t len, size_t pos, bool *failed);
    const struct filter_list *(*list)(void *ctx, const char *name, size_t len);
    uint32_t (*slot)(void *ctx, const struct fieldref *f);
    void (*error)(void *ctx, size_t pos, const char *message);
    /* Where compiled regular expressions are chained (the rule set's list
     * head); NULL: `regex` is refused. */
    struct filter_owned **owned;
    /* Optional: libsinsp's compilation warnings (a regex a simpler operator
     * would do, a field name used as a string value). */
    void (*warn)(void *ctx, size_t pos, const char *message);
};

/* The compiled condition, or NULL after reporting every error found. */
struct cnode *filter_parse(const struct filter_env *env, const char *text, size_t len);

/* Whether text parses (libsinsp's grammar alone: no field, macro or value
 * is looked up); 0, or -1 with the message and its byte offset. */
int filter_syntax_check(const char *text, size_t len, char *err, size_t errlen, size_t *err_pos);

/* Falco's unescaping of a quoted token tok[0..n) (both quotes included)
 * into out (at least n bytes): \b \f \n \r \t \\ \/ \xHH, the token's own
 * quote, and "\ " giving a backslash (libsinsp's legacy). 0, or -1 with a
 * message and the offset in tok of the bad escape. */
int filter_unescape(const char *tok, size_t n, char *out, size_t *outlen, size_t *bad, char *err, size_t errlen);

/* Builds `field op (values)` directly (exceptions); same checks as parsing.
 * pos is where to report a problem. */
struct cnode *filter_make_check(const struct filter_env *env, const char *field, size_t flen, enum filter_op op,
                                const char *const *values, const uint32_t *lens, size_t nvalues, size_t pos);
/* The same with a modifier (`startswith oneof` in an exception's comps):
 * the values are the list the modifier ranges over. */
struct cnode *filter_make_check_mod(const struct filter_env *env, const char *field, size_t flen, enum filter_op op,
                                    enum filter_mod mod, const char *const *values, const uint32_t *lens,
                                    size_t nvalues, size_t pos);
/* AND / OR / NOT over nodes (NULL kids make the result NULL). */
struct cnode *filter_make_node(struct arena *a, enum cnode_kind kind, struct cnode **kids, uint32_t n);
/* The operator named s (exceptions' comps), or -1. */
int filter_op_parse(const char *s);
/* An exceptions' comp as Falco reads one: an operator, or a string operator
 * and a modifier after one space ("startswith oneof"). 0, or -1 (not one). */
int filter_cmp_parse(const char *s, enum filter_op *op, enum filter_mod *mod);

/* Where a node may be true, or false: the event types, and the directions
 * (FILTER_DIR_* bits). A rule is indexed by the types it may be true for,
 * and goes into the index of syscall enter points only if it may be true
 * for one. */
#define FILTER_DIR_ENTER 1u   /* evt.dir = > */
#define FILTER_DIR_EXIT 2u    /* evt.dir = < */
#define FILTER_DIR_ALL (FILTER_DIR_ENTER | FILTER_DIR_EXIT)
struct filter_reach {
    struct evtype_set types;
    unsigned dirs;
};
void filter_reach(const struct cnode *n, struct filter_reach *may_true, struct filter_reach *may_false);

bool filter_eval(struct evctx *x, const struct cnode *n);

/* Whether n can be true on an event of type t and direction dir ('<' or
 * '>') sent by point `point` (gvisor.point's value), every other field
 * unknown: false only when evt.type, evt.dir and gvisor.point alone rule
 * the event out. What a rule needs from runsc (rules_needs) asks it. */
bool filter_may_match(const struct cnode *n, unsigned t, char dir, const char *point);

/* Calls fn for every field n reads, through its macros and transformers. */
void filter_fields(const struct cnode *n, void (*fn)(void *ctx, const struct fieldref *f), void *ctx);

#endif
