/* filter_ast.h - a condition's syntax tree, as libsinsp's parser builds it
 * (falcosecurity/libs userspace/libsinsp/filter/parser.h, whose grammar
 * filter_parse.c follows production by production). Internal to rules/:
 * filter.c compiles the tree; filter_syntax_check (filter.h) exposes the
 * parser alone.
 *
 * The tree lives in a temporary arena for the time of one compile: values
 * a compiled condition keeps are copied out of it.
 */
#ifndef SECCHECKD_FILTER_AST_H
#define SECCHECKD_FILTER_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "filter.h"

enum ast_kind {
    AST_AND, AST_OR, AST_NOT,
    AST_IDENT,        /* a macro name */
    AST_UNARY,        /* left exists */
    AST_BINARY,       /* left op right */
    AST_FIELD,        /* name, optional [arg] */
    AST_TRANSFORM,    /* name(args...), optional [arg]; "val" on right-hand sides only */
    AST_VALUE,        /* a bare or quoted string, or a number */
    AST_LIST,         /* (v, v, ...) of values: the right-hand side of a list operator */
    AST_TLIST,        /* (a, b, ...) of fields, transformers, quoted strings, numbers: a transformer argument */
};

struct ast {
    uint8_t kind;            /* enum ast_kind */
    uint8_t op;              /* UNARY, BINARY: enum filter_op */
    uint8_t mod;             /* BINARY: enum filter_mod */
    bool quoted;             /* VALUE: written quoted (a quoted name never names a list) */
    bool has_arg;            /* FIELD, TRANSFORM: [arg] given (possibly empty) */
    uint32_t pos;            /* byte offset of its first character in the text */
    uint32_t op_pos;         /* UNARY, BINARY: where the operator is */
    const char *text;        /* IDENT, FIELD, TRANSFORM: the name; VALUE: the value, unescaped */
    uint32_t len;
    const char *arg;         /* FIELD, TRANSFORM: the argument, unescaped when quoted */
    uint32_t arg_len;
    uint32_t n;
    struct ast **kids;       /* AND, OR: operands; NOT: one; UNARY: left; BINARY: left, right;
                                TRANSFORM: arguments; LIST, TLIST: items */
};

/* A syntax error: where, and what. */
struct ast_error {
    size_t pos;
    char msg[240];
};

/* Recursion depth past which the parser refuses a condition, counted the
 * way libsinsp's parser counts it (depth_guard in parser.cpp: about five
 * per parenthesis) at the depth Falco sets for rule conditions
 * (falco userspace/engine/rule_loader_compiler.cpp:285,
 * set_max_depth(1000); libsinsp's own default is 100): 198 parentheses
 * around a comparison load, 199 do not. */
#define AST_MAX_DEPTH 1000

/* Parses text[0..len) into a tree in arena a; NULL with *err on a syntax
 * error or when a fills up. */
struct ast *ast_parse(struct arena *a, const char *text, size_t len, struct ast_error *err);

/* Field | FieldTransformer alone, the whole of text (an exception's field,
 * as Falco pastes it into the condition it builds). */
struct ast *ast_parse_operand(struct arena *a, const char *text, size_t len, struct ast_error *err);

#endif
