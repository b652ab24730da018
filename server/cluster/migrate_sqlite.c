/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd --migrate-from-sqlite: the secret.key side of store_migrate_from_sqlite(). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "kiln/error.h"
#include "cluster/migrate_sqlite.h"
#include "store/store_migrate.h"

struct run {
	const struct secret_key *old_key, *new_key;
	FILE *progress;
	int64_t tables, rows;
};

static int reseal(void *ud, unsigned char **out, size_t *out_len, const unsigned char *sealed,
		  size_t len, const char *ad)
{
	struct run *r = ud;
	char *plain = NULL;
	int ret = secret_decrypt(&plain, r->old_key, sealed, len, ad);

	if (ret < 0)
		return kiln_fail(ret, "the secret.key beside the SQLite file does not open it");
	ret = secret_encrypt(out, out_len, r->new_key, plain, ad);
	secret_free_string(plain);
	return ret;
}

/* n with a comma every three digits: 1,234,567. */
static const char *grouped(char buf[32], int64_t n)
{
	char digits[24];
	int len = snprintf(digits, sizeof(digits), "%lld", (long long)n), o = 0;

	for (int i = 0; i < len; i++) {
		if (i > 0 && digits[i - 1] != '-' && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

static void copied(void *ud, const char *table, int64_t rows)
{
	struct run *r = ud;
	char n[32];

	fprintf(r->progress, "kilnd: copied %s %s\n", grouped(n, rows), table);
	r->tables++;
	r->rows += rows;
}

int migrate_sqlite_run(struct store *st, const char *path, const struct secret_key *key,
		       FILE *progress)
{
	struct run r = {.new_key = key, .progress = progress};
	struct secret_key *old_key = secret_key_new();
	char *dir = strdup(path), *slash, *key_path = NULL, old_check[65], new_check[65], n[32];
	struct store_migrate_ops ops = {.reseal = reseal, .copied = copied, .ud = &r,
					.old_key_check = old_check, .new_key_check = new_check};
	int ret;

	if (!old_key || !dir) {
		ret = kiln_fail(KILN_ERROR, "out of memory");
		goto done;
	}
	/* the old state dir's key: the one beside its kiln.db */
	if ((slash = strrchr(dir, '/')))
		*slash = '\0';
	if (asprintf(&key_path, "%s/secret.key", slash ? dir : ".") < 0) {
		key_path = NULL;
		ret = kiln_fail(KILN_ERROR, "out of memory");
		goto done;
	}
	if ((ret = secret_key_load(old_key, key_path)) < 0) {
		kiln_fail_prefix(ret, "migrate: the secret.key of %s", path);
		goto done;
	}
	r.old_key = old_key;
	cluster_key_value(old_check, old_key);
	cluster_key_value(new_check, key);
	if ((ret = store_migrate_from_sqlite(st, path, &ops)) < 0)
		goto done;
	fprintf(progress, "kilnd: migrated %s: %s rows in %lld tables into PostgreSQL; kept "
			  "Redfish sessions were left out (each kilnd logs in afresh)\n",
		path, grouped(n, r.rows), (long long)r.tables);
done:
	secret_key_free(old_key);
	free(key_path);
	free(dir);
	return ret;
}
