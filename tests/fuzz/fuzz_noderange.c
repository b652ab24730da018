/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness: noderange_expand and noderange_compress, with the property that a
 * compressed range expands back to the same names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "kiln/noderange.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* "all" and any @group: three fixed nodes */
static int resolve(void *ud, const char *name, int is_group, struct kiln_nodelist *out)
{
	(void)ud;
	(void)is_group;
	if (strcmp(name, "missing") == 0)
		return kiln_fail(KILN_ENOTFOUND, "no group '%s'", name);
	return kiln_nodelist_add(out, "gpu01") < 0 || kiln_nodelist_add(out, "gpu02") < 0 ||
		       kiln_nodelist_add(out, "login1") < 0
		       ? KILN_ERROR
		       : 0;
}

static int cmp_names(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kiln_nodelist a = { 0 }, b = { 0 };
	char *expr, *folded = NULL;

	if (size > 512) /* a range's text is short; longer inputs only slow the search */
		return 0;
	if (!(expr = malloc(size + 1)))
		return 0;
	memcpy(expr, data, size);
	expr[size] = '\0';
	if (noderange_expand(&a, expr, resolve, NULL) == 0 && a.count <= 100000) {
		folded = noderange_compress(a.names, a.count);
		if (!folded)
			abort();
		/* what compress makes, expand reads back: the same names, none more (no names
		 * fold to "", which is no range: "@g,-@g" is empty) */
		if (a.count == 0 && folded[0])
			abort();
		if (a.count && (noderange_expand(&b, folded, NULL, NULL) < 0 || b.count != a.count))
			abort();
		/* sorted and compared pairwise (a contains() per name was quadratic: a
		 * 42,013-name range took the harness 28 s) */
		if (a.count) {
			qsort(a.names, a.count, sizeof(*a.names), cmp_names);
			qsort(b.names, b.count, sizeof(*b.names), cmp_names);
		}
		for (size_t i = 0; i < a.count; i++)
			if (strcmp(a.names[i], b.names[i]) != 0)
				abort();
	}
	kiln_nodelist_free(&a);
	kiln_nodelist_free(&b);
	free(folded);
	free(expr);
	kiln_error_clear();
	return 0;
}
