/* append_output.h - Falco's append_output as the loader applies it (the
 * settings themselves: rules.h). Not an interface of the module.
 *
 * falcosecurity/falco 130747499b: userspace/falco/configuration.h:241-310
 * reads the entries, app/actions/init_falco_engine.cpp:26-89 turns each
 * into the engine's extra output formats and fields (suggested_output: one
 * format "foo_bar=%foo.bar" per suggested field), and
 * userspace/engine/rule_loader_compiler.cpp:445-493 applies them to every
 * rule of a matching source, tags and name when the rules compile.
 */
#ifndef SECCHECKD_RULES_APPEND_OUTPUT_H
#define SECCHECKD_RULES_APPEND_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "rules.h"

/* One extra_fields item: `- NAME: FORMAT`, or a field by its name (raw). */
struct ao_field {
    const char *key;
    const char *format;           /* NULL when raw */
    bool raw;
};

struct ao_entry {
    const char *source;           /* match.source; NULL: any */
    const char **tags;            /* match.tags: the rule must have all of them */
    size_t ntags;
    const char *rule;             /* match.rule; NULL: any */
    const char *extra_output;     /* NULL: none */
    bool suggested;               /* suggested_output: true */
    struct ao_field *fields;
    size_t nfields;
};

struct rules_append_output {
    struct ao_entry *entries;
    size_t n;
};

/* The settings the loads that follow use (a reference; NULL: none), and
 * its release. */
const struct rules_append_output *append_output_acquire(void);
void append_output_release(const struct rules_append_output *ao);

/* Whether entry e applies to a rule of that name, source ("" is syscall)
 * and tags: Falco's match (std::includes of the entry's tags in the
 * rule's). */
bool append_output_matches(const struct ao_entry *e, const char *name, const char *source, const char *const *tags,
                           size_t ntags);

/* The loader's side: what an entry is matched against (Falco's match:
 * the item's name, source and tags) and where the text it adds comes from,
 * for a rule (load_compile.c) or a sequence (sequence_load.c) alike. */
struct loader;
struct frag;
struct lpos;
struct tbuild;
struct tmpl_env;
struct template;
struct ao_target {
    const char *name;
    const char *source;           /* "": syscall */
    const char *const *tags;
    size_t ntags;
    const struct frag *output;    /* the output's text: where added text is said to come from; NULL: none */
    const struct lpos *pos;       /* where a warning points */
};

/* Appends the matching entries' extra_output and suggested fields to the
 * output text, then drops %container.info (with Falco's warning). */
void append_output_text(struct loader *L, const struct ao_target *t, struct tbuild *out);
/* Adds the matching entries' extra_fields to the compiled output; 0, or
 * -1 after reporting the problem. */
int append_output_fields(struct loader *L, const struct ao_target *t, const struct tmpl_env *env,
                         struct template *tpl);

#endif
