#include "yaml_tree.h"

#include <stdio.h>
#include <string.h>
#include <yaml.h>

struct builder {
    struct arena *a;
    struct ynode *stack[YTREE_MAX_DEPTH + 1];
    size_t caps[YTREE_MAX_DEPTH + 1];
    int depth;
    size_t nodes;
    struct ynode **docs;
    size_t ndocs, docs_cap;
    struct ytree_error *err;
};

static int fail(struct builder *b, const yaml_mark_t *m, const char *msg)
{
    b->err->line = (unsigned)m->line + 1;
    b->err->column = (unsigned)m->column + 1;
    snprintf(b->err->message, sizeof(b->err->message), "%s", msg);
    return -1;
}

/* Appends p to an arena-backed array that doubles (the old copy stays in
 * the arena: at most twice the final size). */
static int push(struct arena *a, struct ynode ***items, size_t *count, size_t *cap, struct ynode *p)
{
    if (*count == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4;
        struct ynode **n = arena_alloc(a, ncap * sizeof(*n));
        if (!n)
            return -1;
        if (*count)
            memcpy(n, *items, *count * sizeof(*n));
        *items = n;
        *cap = ncap;
    }
    (*items)[(*count)++] = p;
    return 0;
}

static struct ynode *new_node(struct builder *b, enum ynode_kind kind, const yaml_event_t *ev)
{
    if (++b->nodes > YTREE_MAX_NODES)
        return NULL;
    struct ynode *n = arena_alloc(b->a, sizeof(*n));
    if (!n)
        return NULL;
    memset(n, 0, sizeof(*n));
    n->kind = kind;
    n->line = (unsigned)ev->start_mark.line + 1;
    n->column = (unsigned)ev->start_mark.column + 1;
    n->start = ev->start_mark.index;
    n->end = ev->end_mark.index;
    return n;
}

/* Attaches a finished node to the open container, or makes it a document. */
static int attach(struct builder *b, struct ynode *n)
{
    if (b->depth == 0) {
        size_t cap = b->docs_cap;
        int rc = push(b->a, &b->docs, &b->ndocs, &cap, n);
        b->docs_cap = cap;
        return rc;
    }
    struct ynode *parent = b->stack[b->depth - 1];
    return push(b->a, &parent->items, &parent->count, &b->caps[b->depth - 1], n);
}

static enum yscalar_style style_of(yaml_scalar_style_t s)
{
    switch (s) {
    case YAML_SINGLE_QUOTED_SCALAR_STYLE: return YS_SINGLE;
    case YAML_DOUBLE_QUOTED_SCALAR_STYLE: return YS_DOUBLE;
    case YAML_LITERAL_SCALAR_STYLE: return YS_LITERAL;
    case YAML_FOLDED_SCALAR_STYLE: return YS_FOLDED;
    default: return YS_PLAIN;
    }
}

static int on_event(struct builder *b, const yaml_event_t *ev)
{
    static const char too_many[] = "too many YAML nodes (at most 1000000 in one file)";
    struct ynode *n;
    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        return fail(b, &ev->start_mark, "YAML aliases (*name) are not supported in rules files");
    case YAML_SCALAR_EVENT:
        if (!(n = new_node(b, YN_SCALAR, ev)))
            return fail(b, &ev->start_mark, b->nodes > YTREE_MAX_NODES ? too_many : "out of memory");
        n->style = style_of(ev->data.scalar.style);
        n->len = ev->data.scalar.length;
        n->value = arena_alloc(b->a, n->len + 1);
        if (!n->value)
            return fail(b, &ev->start_mark, "out of memory");
        memcpy(n->value, ev->data.scalar.value, n->len);
        n->value[n->len] = '\0';
        return attach(b, n) == 0 ? 0 : fail(b, &ev->start_mark, "out of memory");
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (b->depth >= YTREE_MAX_DEPTH)
            return fail(b, &ev->start_mark, "YAML nested too deeply (at most 64 levels)");
        if (!(n = new_node(b, ev->type == YAML_SEQUENCE_START_EVENT ? YN_SEQ : YN_MAP, ev)))
            return fail(b, &ev->start_mark, b->nodes > YTREE_MAX_NODES ? too_many : "out of memory");
        b->caps[b->depth] = 0;
        b->stack[b->depth++] = n;
        return 0;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        n = b->stack[--b->depth];
        n->end = ev->end_mark.index;
        return attach(b, n) == 0 ? 0 : fail(b, &ev->start_mark, "out of memory");
    default:
        return 0;
    }
}

int ytree_parse(struct arena *a, const char *buf, size_t len, struct ynode ***docs, size_t *ndocs,
                struct ytree_error *err)
{
    yaml_parser_t parser;
    struct builder b = {.a = a, .err = err};
    memset(err, 0, sizeof(*err));
    if (!yaml_parser_initialize(&parser)) {
        snprintf(err->message, sizeof(err->message), "out of memory");
        return -1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
    int rc = 0;
    for (bool done = false; !done && rc == 0;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            err->line = (unsigned)parser.problem_mark.line + 1;
            err->column = (unsigned)parser.problem_mark.column + 1;
            snprintf(err->message, sizeof(err->message), "not valid YAML: %s%s%s",
                     parser.problem ? parser.problem : "syntax error", parser.context ? " " : "",
                     parser.context ? parser.context : "");
            rc = -1;
            break;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        rc = on_event(&b, &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    *docs = b.docs;
    *ndocs = b.ndocs;
    return rc;
}

const struct ynode *ytree_get(const struct ynode *map, const char *key)
{
    if (!map || map->kind != YN_MAP)
        return NULL;
    for (size_t i = 0; i + 1 < map->count; i += 2)
        if (map->items[i]->kind == YN_SCALAR && strcmp(map->items[i]->value, key) == 0)
            return map->items[i + 1];
    return NULL;
}
