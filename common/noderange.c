/* SPDX-License-Identifier: Apache-2.0 */
/* Node range expressions: expansion to node names and compression back to ranges. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/buf.h"
#include "kiln/error.h"
#include "kiln/noderange.h"

#define MAX_NAMES 1000000u  /* per range and per expression */
#define MAX_DIGITS 18       /* numbers in brackets stay well inside uint64_t */
#define MAX_GROUPS 8        /* bracket groups in one element */
#define NAME_MAX_LEN 63

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int kiln_node_name_valid(const char *name)
{
	size_t n;

	if (!name || !name[0] || name[0] == '.' || name[0] == '_' || name[0] == '-')
		return 0;
	for (n = 0; name[n]; n++) {
		if (!name_char(name[n]) || n >= NAME_MAX_LEN)
			return 0;
	}
	return 1;
}

/* --- the list --- */

static int list_push(struct kiln_nodelist *l, char *owned)
{
	if (l->count == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 16;
		char **p = realloc(l->names, ncap * sizeof(*p));

		if (!p)
			return kiln_fail(KILN_ERROR, "out of memory");
		l->names = p;
		l->cap = ncap;
	}
	l->names[l->count++] = owned;
	return 0;
}

int kiln_nodelist_contains(const struct kiln_nodelist *l, const char *name)
{
	for (size_t i = 0; i < l->count; i++) {
		if (l->names[i] && strcmp(l->names[i], name) == 0)
			return 1;
	}
	return 0;
}

int kiln_nodelist_add(struct kiln_nodelist *l, const char *name)
{
	char *copy;

	if (kiln_nodelist_contains(l, name))
		return 0;
	copy = strdup(name);
	if (!copy)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (list_push(l, copy) < 0) {
		free(copy);
		return KILN_ERROR;
	}
	return 0;
}

void kiln_nodelist_free(struct kiln_nodelist *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->count; i++)
		free(l->names[i]);
	free(l->names);
	l->names = NULL;
	l->count = 0;
	l->cap = 0;
}

/*
 * --- an ordered set: a list plus an open-addressing index, so that expressions of
 * a million names stay linear. Removed names leave NULL holes, squeezed out at the end.
 */

#define SLOT_EMPTY 0
#define SLOT_GONE SIZE_MAX

struct nset {
	struct kiln_nodelist list;
	size_t *slots; /* SLOT_EMPTY, SLOT_GONE or list index + 1 */
	size_t nslots; /* power of two */
	size_t used;   /* slots not empty (live or gone) */
	size_t live;
};

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Slot holding name, or the first free slot of its probe sequence when absent. */
static size_t nset_find(const struct nset *s, const char *name, int *found)
{
	size_t mask = s->nslots - 1, i = (size_t)name_hash(name) & mask, first_gone = SIZE_MAX;

	for (;;) {
		size_t v = s->slots[i];

		if (v == SLOT_EMPTY) {
			*found = 0;
			return first_gone != SIZE_MAX ? first_gone : i;
		}
		if (v == SLOT_GONE) {
			if (first_gone == SIZE_MAX)
				first_gone = i;
		} else if (strcmp(s->list.names[v - 1], name) == 0) {
			*found = 1;
			return i;
		}
		i = (i + 1) & mask;
	}
}

static int nset_rehash(struct nset *s, size_t nslots)
{
	size_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return kiln_fail(KILN_ERROR, "out of memory");
	free(s->slots);
	s->slots = slots;
	s->nslots = nslots;
	s->used = 0;
	for (size_t k = 0; k < s->list.count; k++) {
		int found;
		size_t i;

		if (!s->list.names[k])
			continue;
		i = nset_find(s, s->list.names[k], &found);
		s->slots[i] = k + 1;
		s->used++;
	}
	return 0;
}

/* Adds a copy of name unless present. */
static int nset_add(struct nset *s, const char *name, size_t len)
{
	char *copy;
	size_t i;
	int found, rc;

	if ((s->used + 1) * 2 > s->nslots) {
		size_t want = s->nslots ? s->nslots : 64;

		while ((s->live + 1) * 4 > want)
			want *= 2;
		if ((rc = nset_rehash(s, want)) < 0)
			return rc;
	}
	copy = strndup(name, len);
	if (!copy)
		return kiln_fail(KILN_ERROR, "out of memory");
	i = nset_find(s, copy, &found);
	if (found) {
		free(copy);
		return 0;
	}
	if (s->live >= MAX_NAMES) {
		free(copy);
		return kiln_fail(KILN_ETOOBIG, "expression yields more than %u names", MAX_NAMES);
	}
	if ((rc = list_push(&s->list, copy)) < 0) {
		free(copy);
		return rc;
	}
	if (s->slots[i] == SLOT_EMPTY)
		s->used++;
	s->slots[i] = s->list.count;
	s->live++;
	return 0;
}

static void nset_remove(struct nset *s, const char *name)
{
	size_t i;
	int found;

	if (!s->nslots)
		return;
	i = nset_find(s, name, &found);
	if (!found)
		return;
	free(s->list.names[s->slots[i] - 1]);
	s->list.names[s->slots[i] - 1] = NULL;
	s->slots[i] = SLOT_GONE;
	s->live--;
}

static void nset_free(struct nset *s)
{
	kiln_nodelist_free(&s->list);
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

/* --- expansion --- */

struct bgroup {
	size_t pre_start, pre_len;  /* literal text before the group, offsets into expr */
	size_t start, end;          /* inside the brackets, [start, end) */
	uint64_t count;             /* names this group yields */
};

struct parser {
	const char *expr;
	kiln_noderange_resolver resolver;
	void *ud;
};

static int fail_at(const struct parser *p, size_t pos, const char *what)
{
	size_t len = strlen(p->expr);

	if (len <= 80)
		return kiln_fail(KILN_EINVAL, "noderange '%s': position %zu: %s", p->expr, pos + 1,
				 what);
	return kiln_fail(KILN_EINVAL, "noderange: position %zu: %s", pos + 1, what);
}

/* Reads a run of digits at *pos (bounded by end) into *v and its width; error if none. */
static int read_number(const struct parser *p, size_t *pos, size_t end, uint64_t *v,
		       size_t *width)
{
	size_t start = *pos;

	*v = 0;
	while (*pos < end && is_digit(p->expr[*pos])) {
		if (*pos - start >= MAX_DIGITS)
			return fail_at(p, start, "number too long");
		*v = *v * 10 + (uint64_t)(p->expr[*pos] - '0');
		(*pos)++;
	}
	if (*pos == start)
		return fail_at(p, start, *pos < end ? "expected a number" : "expected a number before ']'");
	*width = *pos - start;
	return 0;
}

/* One bracket item: lo-hi (or lo alone), printed at width digits. */
struct item {
	uint64_t lo, hi;
	size_t width;
};

/* Reads the item at *pos of group g and moves *pos past it and its comma. */
static int item_read(const struct parser *p, const struct bgroup *g, size_t *pos,
		     struct item *it)
{
	size_t w2, item_start = *pos;
	int rc;

	if ((rc = read_number(p, pos, g->end, &it->lo, &it->width)) < 0)
		return rc;
	it->hi = it->lo;
	if (*pos < g->end && p->expr[*pos] == '-') {
		(*pos)++;
		if ((rc = read_number(p, pos, g->end, &it->hi, &w2)) < 0)
			return rc;
		if (it->hi < it->lo)
			return fail_at(p, item_start, "range end is below its start");
		if (it->hi - it->lo >= MAX_NAMES)
			return fail_at(p, item_start, "range yields more than 1000000 names");
	}
	if (*pos < g->end) {
		if (p->expr[*pos] != ',')
			return fail_at(p, *pos, "expected ',' '-' or ']' in brackets");
		(*pos)++;
		if (*pos == g->end)
			return fail_at(p, *pos, "expected a number before ']'");
	}
	return 0;
}

/* Validates group g and counts the names it yields into g->count. */
static int group_count(const struct parser *p, struct bgroup *g)
{
	size_t pos = g->start;

	g->count = 0;
	while (pos < g->end) {
		struct item it;
		int rc;

		if ((rc = item_read(p, g, &pos, &it)) < 0)
			return rc;
		g->count += it.hi - it.lo + 1;
		if (g->count > MAX_NAMES)
			return fail_at(p, g->start, "range yields more than 1000000 names");
	}
	return 0;
}

/* Where the odometer stands in one group: the current item and value. */
struct cursor {
	size_t next; /* position of the next item */
	struct item it;
	uint64_t v;
};

static void cursor_first(const struct parser *p, const struct bgroup *g, struct cursor *c)
{
	c->next = g->start;
	(void)item_read(p, g, &c->next, &c->it); /* validated by group_count */
	c->v = c->it.lo;
}

/* Steps to the next value; 0 when the group wrapped around to its first. */
static int cursor_next(const struct parser *p, const struct bgroup *g, struct cursor *c)
{
	if (c->v < c->it.hi) {
		c->v++;
		return 1;
	}
	if (c->next < g->end) {
		(void)item_read(p, g, &c->next, &c->it);
		c->v = c->it.lo;
		return 1;
	}
	cursor_first(p, g, c);
	return 0;
}

/* Expands a pattern element [start, end) of expr (no '@', not "all") into s or out. */
static int pattern_expand(const struct parser *p, size_t start, size_t end, struct nset *s,
			  int exclude)
{
	struct bgroup g[MAX_GROUPS];
	size_t ng = 0, pos = start, lit = start, tail_start, tail_len;
	struct cursor cur[MAX_GROUPS];
	uint64_t total = 1;
	char name[NAME_MAX_LEN + 2];
	int rc;

	while (pos < end) {
		char c = p->expr[pos];

		if (c == '[') {
			if (ng == MAX_GROUPS)
				return fail_at(p, pos, "too many bracket groups");
			g[ng].pre_start = lit;
			g[ng].pre_len = pos - lit;
			g[ng].start = ++pos;
			while (pos < end && p->expr[pos] != ']') {
				if (p->expr[pos] == '[')
					return fail_at(p, pos, "nested '['");
				pos++;
			}
			if (pos == end)
				return fail_at(p, g[ng].start - 1, "unterminated '['");
			g[ng].end = pos;
			if (g[ng].end == g[ng].start)
				return fail_at(p, pos, "empty brackets");
			if ((rc = group_count(p, &g[ng])) < 0)
				return rc;
			if (total * g[ng].count > MAX_NAMES)
				return fail_at(p, start, "range yields more than 1000000 names");
			total *= g[ng].count;
			ng++;
			lit = ++pos;
		} else if (c == ']') {
			return fail_at(p, pos, "unexpected ']'");
		} else if (!name_char(c)) {
			char what[48];

			if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f)
				snprintf(what, sizeof(what), "unexpected character 0x%02x",
					 (unsigned char)c);
			else
				snprintf(what, sizeof(what), "unexpected character '%c'", c);
			return fail_at(p, pos, what);
		} else {
			pos++;
		}
	}
	tail_start = lit;
	tail_len = end - lit;

	for (size_t k = 0; k < ng; k++)
		cursor_first(p, &g[k], &cur[k]);
	for (uint64_t n = 0; n < total; n++) {
		size_t o = 0;

		for (size_t k = 0; k < ng; k++) {
			int w;

			if (o + g[k].pre_len > NAME_MAX_LEN)
				return fail_at(p, start, "node name longer than 63 characters");
			memcpy(name + o, p->expr + g[k].pre_start, g[k].pre_len);
			o += g[k].pre_len;
			w = snprintf(name + o, sizeof(name) - o, "%0*llu", (int)cur[k].it.width,
				     (unsigned long long)cur[k].v);
			if (w < 0 || o + (size_t)w > NAME_MAX_LEN)
				return fail_at(p, start, "node name longer than 63 characters");
			o += (size_t)w;
		}
		if (o + tail_len > NAME_MAX_LEN)
			return fail_at(p, start, "node name longer than 63 characters");
		memcpy(name + o, p->expr + tail_start, tail_len);
		o += tail_len;
		name[o] = '\0';
		if (!kiln_node_name_valid(name))
			return fail_at(p, start, "a node name must start with a letter or digit");
		if (exclude)
			nset_remove(s, name);
		else if ((rc = nset_add(s, name, o)) < 0)
			return rc == KILN_ETOOBIG ?
				       fail_at(p, start, "expression yields more than 1000000 names") :
				       rc;
		/* Odometer: the last group turns fastest. */
		for (size_t k = ng; k-- > 0;) {
			if (cursor_next(p, &g[k], &cur[k]))
				break;
		}
	}
	return 0;
}

static int named_expand(const struct parser *p, size_t start, size_t end, int is_group,
			struct nset *s, int exclude)
{
	struct kiln_nodelist members = { 0 };
	char *name = NULL;
	int rc = 0;

	if (!p->resolver) {
		rc = fail_at(p, start, is_group ? "groups are not available here" :
						  "'all' is not available here");
		goto cleanup;
	}
	name = strndup(p->expr + start, end - start);
	if (!name) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	kiln_error_clear();
	if ((rc = p->resolver(p->ud, name, is_group, &members)) < 0) {
		if (!kiln_error_last()[0])
			kiln_fail(rc, "%s '%s' could not be resolved", is_group ? "group" : "name",
				  name);
		goto cleanup;
	}
	for (size_t i = 0; i < members.count; i++) {
		if (!members.names[i])
			continue;
		if (exclude)
			nset_remove(s, members.names[i]);
		else if ((rc = nset_add(s, members.names[i], strlen(members.names[i]))) < 0)
			goto cleanup;
	}
cleanup:
	free(name);
	kiln_nodelist_free(&members);
	return rc;
}

static int element_expand(const struct parser *p, size_t start, size_t end, struct nset *s)
{
	int exclude = 0;

	if (start < end && p->expr[start] == '-') {
		exclude = 1;
		start++;
	}
	if (start == end)
		return fail_at(p, start, exclude ? "expected a name after '-'" : "empty element");
	if (p->expr[start] == '@') {
		if (start + 1 == end)
			return fail_at(p, start + 1, "expected a group name after '@'");
		for (size_t i = start + 1; i < end; i++) {
			if (!name_char(p->expr[i]))
				return fail_at(p, i, "unexpected character in group name");
		}
		return named_expand(p, start + 1, end, 1, s, exclude);
	}
	if (end - start == 3 && memcmp(p->expr + start, "all", 3) == 0)
		return named_expand(p, start, end, 0, s, exclude);
	if (p->expr[start] == '-')
		return fail_at(p, start, "a node name must start with a letter or digit");
	return pattern_expand(p, start, end, s, exclude);
}

static int is_space(char c)
{
	return c == ' ' || c == '\t';
}

int noderange_expand(struct kiln_nodelist *out, const char *expr, kiln_noderange_resolver resolver,
		     void *ud)
{
	struct parser p = { expr, resolver, ud };
	struct nset s = { 0 }, merged = { 0 };
	size_t pos = 0, len, orig = out->count;
	int rc = 0;

	if (!expr)
		return kiln_fail(KILN_EINVAL, "noderange: empty expression");
	len = strlen(expr);
	while (len && is_space(expr[len - 1]))
		len--;
	while (pos < len && is_space(expr[pos]))
		pos++;
	if (pos == len)
		return kiln_fail(KILN_EINVAL, "noderange: empty expression");
	while (pos <= len) {
		size_t start = pos, end, depth = 0;

		while (pos < len && (depth || expr[pos] != ',')) {
			if (expr[pos] == '[')
				depth++;
			else if (expr[pos] == ']' && depth)
				depth--;
			pos++;
		}
		end = pos;
		while (start < end && is_space(expr[start]))
			start++;
		while (end > start && is_space(expr[end - 1]))
			end--;
		if ((rc = element_expand(&p, start, end, &s)) < 0)
			goto cleanup;
		pos++; /* past the comma, or past len at the end */
	}
	/* Merge into out without duplicates; out keeps its own order first. */
	for (size_t i = 0; i < out->count; i++) {
		if ((rc = nset_add(&merged, out->names[i], strlen(out->names[i]))) < 0)
			goto cleanup;
	}
	for (size_t i = 0; i < s.list.count; i++) {
		int found;
		char *name = s.list.names[i];

		if (!name)
			continue;
		if (merged.nslots) {
			nset_find(&merged, name, &found);
			if (found)
				continue;
		}
		if ((rc = list_push(out, name)) < 0)
			goto cleanup;
		s.list.names[i] = NULL; /* now owned by out */
	}
cleanup:
	if (rc < 0) {
		for (size_t i = orig; i < out->count; i++)
			free(out->names[i]);
		out->count = orig;
	}
	nset_free(&s);
	nset_free(&merged);
	return rc;
}

/* --- compression --- */

struct cname {
	size_t idx;      /* position in the input, for stable ordering of groups */
	size_t plen;     /* prefix length; the number follows */
	size_t width;    /* digits, or 0 when the name has no numeric suffix */
	int padded;      /* digits start with a 0 (and are more than one) */
	uint64_t value;
	const char *name;
	size_t group;    /* the first input index of its group */
};

static void cname_parse(struct cname *c, const char *name, size_t idx)
{
	size_t len = strlen(name), d = len;

	while (d > 0 && is_digit(name[d - 1]))
		d--;
	c->idx = idx;
	c->name = name;
	c->plen = d;
	c->width = len - d;
	c->value = 0;
	c->padded = 0;
	if (c->width == 0 || c->width > MAX_DIGITS) {
		c->plen = len;
		c->width = 0;
		return;
	}
	for (size_t i = d; i < len; i++)
		c->value = c->value * 10 + (uint64_t)(name[i] - '0');
	c->padded = c->width > 1 && name[d] == '0';
}

static int cmp_group_value(const void *x, const void *y)
{
	const struct cname *a = x, *b = y;

	if (a->group != b->group)
		return a->group < b->group ? -1 : 1;
	if (a->value != b->value)
		return a->value < b->value ? -1 : 1;
	return 0;
}

/* Formats the grouping key of c with width w into kbuf. */
static int key_format(char *kbuf, size_t klen, size_t w, const struct cname *c)
{
	int n = snprintf(kbuf, klen, "%zu:%.*s", w, (int)c->plen, c->name);

	return n < 0 || (size_t)n >= klen ? -1 : n;
}

/* Finds the group of key (c's prefix, w): 0 and *group when it exists, -1 otherwise. */
static int key_lookup(struct nset *keys, const size_t *key_group, char *kbuf, size_t klen,
		      size_t w, const struct cname *c, size_t *group)
{
	int found = 0, n = key_format(kbuf, klen, w, c);
	size_t slot;

	if (n < 0 || !keys->nslots)
		return -1;
	slot = nset_find(keys, kbuf, &found);
	if (!found)
		return -1;
	*group = key_group[keys->slots[slot] - 1];
	return 0;
}

/* Finds or creates the group of key (c's prefix, w); a new group is founded by index i. */
static int key_get(struct nset *keys, size_t *key_group, char *kbuf, size_t klen, size_t w,
		   const struct cname *c, size_t i, size_t *group)
{
	size_t before = keys->list.count;
	int n;

	if (key_lookup(keys, key_group, kbuf, klen, w, c, group) == 0)
		return 0;
	n = key_format(kbuf, klen, w, c);
	if (n < 0 || nset_add(keys, kbuf, (size_t)n) < 0 || keys->list.count != before + 1)
		return -1;
	key_group[before] = i;
	*group = i;
	return 0;
}

char *noderange_compress(char *const *names, size_t count)
{
	struct cname *c = NULL;
	struct kiln_buf b;
	struct nset keys = { 0 };
	size_t *key_group = NULL;
	char *result = NULL, kbuf[NAME_MAX_LEN + 32];

	kiln_buf_init(&b, 0);
	if (kiln_buf_puts(&b, "") < 0)
		goto cleanup;
	if (count == 0)
		goto done;
	c = calloc(count, sizeof(*c));
	key_group = calloc(count, sizeof(*key_group));
	if (!c || !key_group)
		goto cleanup;
	for (size_t i = 0; i < count; i++)
		cname_parse(&c[i], names[i], i);
	/*
	 * A padded name of width w joins key (prefix, w). A natural one joins (prefix, its width)
	 * when some padded name made that key, else (prefix, 0). Names without digits are alone.
	 * Keys are strings "w:prefix" in an nset whose list index maps to key_group.
	 */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < count; i++) {
			if (c[i].width == 0) {
				c[i].group = i;
				continue;
			}
			if ((pass == 0) != c[i].padded)
				continue;
			if (pass == 1 && key_lookup(&keys, key_group, kbuf, sizeof(kbuf), c[i].width,
						    &c[i], &c[i].group) == 0)
				continue;
			if (key_get(&keys, key_group, kbuf, sizeof(kbuf), c[i].padded ? c[i].width : 0,
				    &c[i], i, &c[i].group) < 0)
				goto cleanup;
		}
	}
	/* Groups come out in the order of their first name (group is its index); members by value. */
	qsort(c, count, sizeof(*c), cmp_group_value);
	for (size_t i = 0; i < count;) {
		size_t j = i, width;
		int multi;

		while (j < count && c[j].group == c[i].group)
			j++;
		if (b.len && kiln_buf_puts(&b, ",") < 0)
			goto cleanup;
		if (c[i].width == 0) {
			if (kiln_buf_puts(&b, c[i].name) < 0)
				goto cleanup;
			i = j;
			continue;
		}
		/* padded groups print every number at the group width; natural ones as they are */
		width = 0;
		for (size_t k = i; k < j; k++) {
			if (c[k].padded)
				width = c[k].width;
		}
		multi = 0;
		for (size_t k = i + 1; k < j; k++) {
			if (c[k].value != c[i].value)
				multi = 1;
		}
		if (kiln_buf_append(&b, c[i].name, c[i].plen) < 0 ||
		    (multi && kiln_buf_puts(&b, "[") < 0))
			goto cleanup;
		for (size_t k = i, first = 1; k < j;) {
			size_t e = k;

			while (e + 1 < j && (c[e + 1].value == c[e].value ||
					     c[e + 1].value == c[e].value + 1))
				e++;
			if (!first && kiln_buf_puts(&b, ",") < 0)
				goto cleanup;
			first = 0;
			if (kiln_buf_printf(&b, "%0*llu", (int)width, (unsigned long long)c[k].value) < 0)
				goto cleanup;
			if (c[e].value != c[k].value &&
			    kiln_buf_printf(&b, "-%0*llu", (int)width, (unsigned long long)c[e].value) < 0)
				goto cleanup;
			k = e + 1;
		}
		if (multi && kiln_buf_puts(&b, "]") < 0)
			goto cleanup;
		i = j;
	}
done:
	result = kiln_buf_steal(&b);
cleanup:
	kiln_buf_free(&b);
	nset_free(&keys);
	free(key_group);
	free(c);
	return result;
}
