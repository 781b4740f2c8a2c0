/* yaml_tree.h - a YAML file read with libyaml into a small tree that keeps
 * every node's position, for the rules loader.
 *
 * Only what a rules file needs: scalars, sequences, mappings. Aliases are
 * refused (they would let a small file stand for an exponential one), so
 * are nesting deeper than YTREE_MAX_DEPTH and more than YTREE_MAX_NODES
 * nodes (libyaml itself has no such bounds). Nodes live in the caller's
 * arena.
 */
#ifndef SECCHECKD_RULES_YAML_TREE_H
#define SECCHECKD_RULES_YAML_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"

#define YTREE_MAX_DEPTH 64
#define YTREE_MAX_NODES 1000000

enum ynode_kind { YN_SCALAR, YN_SEQ, YN_MAP };

/* libyaml's scalar styles, kept to map offsets in a value back to the file. */
enum yscalar_style { YS_PLAIN, YS_SINGLE, YS_DOUBLE, YS_LITERAL, YS_FOLDED };

struct ynode {
    enum ynode_kind kind;
    enum yscalar_style style;
    unsigned line, column;        /* 1-based, of the node's first character */
    size_t start, end;            /* byte offsets of the node in the file */
    char *value;                  /* scalar: NUL-terminated */
    size_t len;
    struct ynode **items;         /* sequence: items; mapping: key, value, key, value... */
    size_t count;                 /* entries of items */
};

struct ytree_error {
    unsigned line, column;        /* 1-based */
    char message[160];
};

/* The top-level nodes of buf's documents (an empty document has none).
 * 0, or -1 with err filled (and nothing to free: the arena owns it all). */
int ytree_parse(struct arena *a, const char *buf, size_t len, struct ynode ***docs, size_t *ndocs,
                struct ytree_error *err);

/* A plain scalar YAML reads as null: empty, ~, null, Null, NULL. */
static inline bool ytree_is_null(const struct ynode *n)
{
    if (n->kind != YN_SCALAR || n->style != YS_PLAIN)
        return false;
    const char *v = n->value;
    return n->len == 0 || (n->len == 1 && v[0] == '~') ||
           (n->len == 4 && (v[0] == 'n' || v[0] == 'N') &&
            ((v[1] == 'u' && v[2] == 'l' && v[3] == 'l') || (v[0] == 'N' && v[1] == 'U' && v[2] == 'L' && v[3] == 'L')));
}

/* A mapping's value for key, or NULL. */
const struct ynode *ytree_get(const struct ynode *map, const char *key);

#endif
