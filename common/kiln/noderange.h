/* SPDX-License-Identifier: Apache-2.0 */
/* Node ranges: gpu[01-32], r[1-2]n[01-08], comma lists, @group, -exclusion, all. */
#ifndef KILN_NODERANGE_H
#define KILN_NODERANGE_H

#include <stddef.h>

struct kiln_nodelist {
	char **names; /* each malloc'd, in the order the expression gives, no duplicates */
	size_t count;
	size_t cap;
};

/*
 * Resolves a name that is not a literal node: "@group" (name = "group", is_group = 1) or
 * "all" (name = "all", is_group = 0). Appends the members to out with kiln_nodelist_add.
 * Returns 0, or a negative code with kiln_fail() set (e.g. unknown group).
 */
typedef int (*kiln_noderange_resolver)(void *ud, const char *name, int is_group,
				       struct kiln_nodelist *out);

/*
 * Expands expr into *out (which the caller initialised or zeroed; on success it owns new
 * names, on failure it is left as it was). Elements are separated by commas at bracket
 * depth 0; an element starting with '-' removes what it expands to. Brackets hold
 * comma-separated numbers or ranges; zero padding is kept (gpu[01-10] -> gpu01..gpu10).
 * Several bracket groups multiply (r[1-2]n[01-02] -> r1n01 r1n02 r2n01 r2n02).
 * resolver may be NULL: then @group and all are errors. Malformed input returns
 * KILN_EINVAL with a message naming the 1-based position. A range yielding more than
 * 1,000,000 names is refused.
 */
int noderange_expand(struct kiln_nodelist *out, const char *expr, kiln_noderange_resolver resolver,
		     void *ud);

/*
 * Folds names into a compact range ("gpu[01-04,07],login1"); the caller frees the result.
 * Names sharing a prefix and numeric suffix width are merged. NULL on ENOMEM.
 */
char *noderange_compress(char *const *names, size_t count);

/* Appends a copy of name unless already present. */
int kiln_nodelist_add(struct kiln_nodelist *l, const char *name);
int kiln_nodelist_contains(const struct kiln_nodelist *l, const char *name);
void kiln_nodelist_free(struct kiln_nodelist *l);

/* A valid node name: 1-63 chars of [A-Za-z0-9._-], starting with a letter or digit. */
int kiln_node_name_valid(const char *name);

#endif
