/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness: an agent report's validation (ingest_report_parse_text) and its storing
 * (ingest_report_store: state, GPU rows, history, events) into a store made once. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "agents/ingest.h"
#include "kiln/error.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct store *st;
static int64_t node_id;
static char dir[64];

static void store_remove(void)
{
	char p[128];

	store_close(st);
	for (const char *const *s = (const char *const[]){ "", "-wal", "-shm", NULL }; *s; s++) {
		snprintf(p, sizeof(p), "%s/kiln.db%s", dir, *s);
		unlink(p);
	}
	rmdir(dir);
}

static void store_once(void)
{
	struct node n = { 0 };
	char db[128];

	snprintf(dir, sizeof(dir), "/tmp/kiln-fuzz-XXXXXX");
	snprintf(db, sizeof(db), "%s/kiln.db", mkdtemp(dir) ? dir : "/tmp");
	if (store_open(&st, db) < 0)
		abort();
	n.name = (char *)"gpu01";
	n.ipmi_cipher = 3;
	if (store_node_insert(st, &n) < 0)
		abort();
	node_id = n.id;
	atexit(store_remove);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ingest_report *r = NULL;
	char field[INGEST_FIELD_MAX];
	json_t *j;
	int dup;

	if (!st)
		store_once();
	j = json_loadb((const char *)data, size, 0, NULL);
	if (j && ingest_report_parse_text(&r, j, (const char *)data, size, field,
					  sizeof(field)) == 0) {
		(void)ingest_report_rejected(r);
		ingest_report_store(st, &dup, node_id, r);
		ingest_report_free(r);
	}
	json_decref(j);
	kiln_error_clear();
	return 0;
}
