/* SPDX-License-Identifier: Apache-2.0 */
/* kiln node: the node inventory (add, list, show, set, rm, import). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/buf.h>
#include <kiln/error.h>
#include <kiln/noderange.h>
#include <kiln/parse.h>

#include "cli.h"
#include "client.h"
#include "csv.h"
#include "output.h"
#include "node_body.h"
#include "prompt.h"

/* node rm asks for confirmation above this many nodes (unless --yes). */
#define RM_CONFIRM_ABOVE 10

static int oom(void)
{
	return kiln_fail(KILN_ERROR, "out of memory");
}

struct node_parse {
	struct cli_ctx *ctx;
	struct node_body nb;
};

static int node_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct node_parse *p = ud;
	int rc = opt->id == NODE_O_CLEAR ? node_body_clear(&p->nb, value)
				    : node_body_set(&p->nb, opt, value);

	if (rc == KILN_EINVAL)
		return cli_usage_error(p->ctx, "--%s: %s", opt->name, kiln_error_last());
	return rc;
}


/* Expands a noderange of literal names (no @group or all: those need nodes that exist). */
static int names_expand(struct kiln_nodelist *out, struct cli_ctx *ctx, const char *expr)
{
	struct kiln_nodelist l = { 0 };
	int rc = noderange_expand(&l, expr, NULL, NULL);

	if (rc < 0)
		return cli_usage_error(ctx, "%s", kiln_error_last());
	for (size_t i = 0; i < l.count; i++) {
		if (!kiln_node_name_valid(l.names[i])) {
			rc = cli_usage_error(ctx, "'%s' is not a valid node name (1-63 of A-Z a-z 0-9 . _ -, "
					     "starting with a letter or digit)", l.names[i]);
			kiln_nodelist_free(&l);
			return rc;
		}
	}
	*out = l;
	return 0;
}

static int one_arg(struct cli_ctx *ctx, const struct cli_args *pos, const char *what)
{
	if (pos->n == 0)
		return cli_usage_error(ctx, "missing %s", what);
	if (pos->n > 1)
		return cli_usage_error(ctx, "unexpected argument '%s'", pos->v[1]);
	return 0;
}

/* Adds "node": name to each node object, as every per-node JSON answer has. */
static void nodes_tag(json_t *nodes)
{
	size_t i;
	json_t *n;

	if (json_is_object(nodes)) {
		json_object_set(nodes, "node", json_object_get(nodes, "name"));
		return;
	}
	json_array_foreach(nodes, i, n)
		json_object_set(n, "node", json_object_get(n, "name"));
}

static char *names_compress(const json_t *nodes, const char *key)
{
	size_t i, n = 0;
	char **names = calloc(json_array_size(nodes) + 1, sizeof(*names));
	json_t *e;
	char *s;

	if (!names)
		return NULL;
	json_array_foreach(nodes, i, e) {
		const char *name = json_string_value(json_object_get(e, key));

		if (name)
			names[n++] = (char *)name;
	}
	s = noderange_compress(names, n);
	free(names);
	return s;
}

static int nodes_table_print(const json_t *nodes)
{
	static const char *const headers[] = { "NAME", "GROUPS", "RACK", "BMC", "USER", "PASSWORD",
						"TLS" };
	struct out_table t;
	size_t i;
	json_t *n;
	int rc = 0;

	out_table_init(&t, headers, 7);
	json_array_foreach(nodes, i, n) {
		char groups[1024], rack[256], bmc[512], user[256];
		const json_t *has_pw = json_object_get(n, "has_bmc_password");
		const char *row[] = {
			json_string_value(json_object_get(n, "name")),
			out_cell(groups, sizeof(groups), json_object_get(n, "groups")),
			out_cell(rack, sizeof(rack), json_object_get(n, "rack")),
			out_cell(bmc, sizeof(bmc), json_object_get(n, "bmc")),
			out_cell(user, sizeof(user), json_object_get(n, "bmc_user")),
			json_is_true(has_pw) ? "set" : "-",
			json_object_get(n, "bmc") && !json_is_null(json_object_get(n, "bmc"))
				? json_string_value(json_object_get(n, "tls")) : NULL,
		};

		rc = out_table_add(&t, row);
		if (rc < 0)
			goto cleanup;
	}
	out_table_print(&t, stdout);
cleanup:
	out_table_free(&t);
	return rc;
}

/* One node, one field a line; the known fields first, then whatever else kilnd sent. */
/*
 * An object member of a node (its agent's report): a row per field, "agent.driver_version",
 * with numbers as people read them, and a row per element of an array of objects
 * ("agent.gpus[0]": "name NVIDIA H100, power_draw_w 612.3 W, ...").
 */
static int object_rows(struct out_table *t, const char *prefix, const json_t *obj)
{
	const char *key;
	json_t *v, *e;
	size_t i;
	int rc = 0;

	json_object_foreach((json_t *)obj, key, v) {
		char name[160], buf[2048];
		const char *row[2] = { name, NULL };

		if (json_is_array(v) && json_is_object(json_array_get(v, 0))) {
			json_array_foreach(v, i, e) {
				snprintf(name, sizeof(name), "%s.%s[%zu]", prefix, key, i);
				row[1] = out_field(buf, sizeof(buf), key, e);
				if ((rc = out_table_add(t, row)) < 0)
					return rc;
			}
			continue;
		}
		snprintf(name, sizeof(name), "%s.%s", prefix, key);
		row[1] = out_field(buf, sizeof(buf), key, v);
		if ((rc = out_table_add(t, row)) < 0)
			return rc;
	}
	return rc;
}

static int node_show_print(json_t *node)
{
	static const char *const order[] = { "name", "groups", "rack", "bmc", "bmc_user",
					     "has_bmc_password", "tls", "tls_ca_file",
					     "tls_fingerprint", "ipmi_cipher", "ipmi_privilege",
					     "ipmi_workarounds", "sol", "bmc_system", "created_at",
					     "updated_at", NULL };
	static const char *const headers[] = { "FIELD", "VALUE" };
	struct out_table t;
	const char *key;
	json_t *v;
	int rc = 0;

	out_table_init(&t, headers, 2);
	for (size_t i = 0; order[i] && rc == 0; i++) {
		char buf[1024];
		const char *row[2] = { order[i], NULL };

		v = json_object_get(node, order[i]);
		if (!v)
			continue;
		if (strcmp(order[i], "created_at") == 0 || strcmp(order[i], "updated_at") == 0)
			row[1] = out_time(buf, sizeof(buf), v);
		else
			row[1] = out_cell(buf, sizeof(buf), v);
		rc = out_table_add(&t, row);
	}
	json_object_foreach(node, key, v) {
		char buf[1024];
		const char *row[2] = { key, NULL };
		bool known = strcmp(key, "node") == 0;

		for (size_t i = 0; order[i] && !known; i++)
			known = strcmp(order[i], key) == 0;
		if (known || rc < 0)
			continue;
		if (json_is_object(v)) {
			rc = object_rows(&t, key, v);
			continue;
		}
		row[1] = out_field(buf, sizeof(buf), key, v);
		rc = out_table_add(&t, row);
	}
	if (rc == 0)
		out_table_print(&t, stdout);
	out_table_free(&t);
	return rc;
}


/* An import error's message without kilnd's "nodes[N]: " (the caller names the node). */
static const char *import_message(const json_t *err)
{
	const char *msg = json_string_value(json_object_get(err, "error"));
	const char *p;

	if (!msg)
		return "rejected";
	if (strncmp(msg, "nodes[", 6) == 0 && (p = strstr(msg, "]: ")) != NULL)
		return p + 3;
	return msg;
}

/* kilnd adds a node whose BMC did not answer (uncabled nodes are normal) and
 * says so: one line on stderr each. */
static void warnings_print(const json_t *nodes)
{
	size_t i;
	json_t *n;

	json_array_foreach(nodes, i, n) {
		const char *w = json_string_value(json_object_get(n, "warning"));

		if (w)
			fprintf(stderr, "kiln: %s: %s\n",
				json_string_value(json_object_get(n, "name")), w);
	}
}

static int node_add(struct cli_ctx *ctx, int argc, char **argv)
{
	static const char synopsis[] = "NODERANGE [--bmc URL --bmc-user U --bmc-password-file F] "
				       "[--group G]... [options]";
	struct node_parse p = { .ctx = ctx };
	struct kiln_nodelist names = { 0 };
	struct cli_args pos = { 0 };
	json_t *res = NULL, *out = NULL, *list = NULL, *err = NULL;
	char *range = NULL;
	int rc;

	p.nb.obj = json_object();
	if (!p.nb.obj)
		return oom();
	rc = cli_args_parse(&pos, ctx, node_add_opts, argc - 1, argv + 1, node_opt, &p);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, synopsis,
			       "Adds nodes (one, or a range with the same settings). Without --bmc the "
			       "node is agent-only.\nWith --bmc-user and no password file, the password "
			       "is asked on the terminal.\nkilnd asks each Redfish BMC first: one with "
			       "several systems needs --bmc-system (refused, exit 2, naming them); one "
			       "that does not answer is added with a warning.", node_add_opts);
		goto cleanup;
	}
	rc = one_arg(ctx, &pos, "NODERANGE");
	if (rc == 0)
		rc = names_expand(&names, ctx, pos.v[0]);
	if (rc == 0 && (json_object_get(p.nb.obj, "bmc_user") || p.nb.password_file) &&
	    !json_object_get(p.nb.obj, "bmc"))
		rc = cli_usage_error(ctx, "BMC credentials need --bmc");
	if (rc == 0)
		rc = node_body_finish(&p.nb, pos.v[0], !ctx->dry_run);
	if (rc < 0)
		goto cleanup;
	range = noderange_compress(names.names, names.count);
	list = json_array();
	if (!range || !list) {
		rc = oom();
		goto cleanup;
	}
	for (size_t i = 0; i < names.count; i++) {
		json_t *n = json_deep_copy(p.nb.obj);

		if (!n || json_object_set_new(n, "name", json_string(names.names[i])) < 0 ||
		    json_array_append_new(list, n) < 0) {
			json_decref(n);
			rc = oom();
			goto cleanup;
		}
	}
	if (ctx->dry_run) {
		if (ctx->output == CLI_OUT_JSON) {
			out = json_array();
			for (size_t i = 0; out && i < names.count; i++)
				json_array_append_new(out, node_body_printable(json_array_get(list, i)));
			rc = out ? out_json_print(out, stdout) : oom();
		} else {
			for (size_t i = 0; i < names.count; i++)
				printf("would add %s\n", names.names[i]);
		}
		goto cleanup;
	}
	if (names.count == 1) {
		rc = cli_api(&res, NULL, ctx, "POST", "/nodes", json_array_get(list, 0));
		if (rc < 0)
			goto cleanup;
		out = json_pack("[O]", res);
	} else {
		json_t *body = json_pack("{s:O}", "nodes", list);

		rc = body ? cli_api(&res, &err, ctx, "POST", "/nodes/import", body) : oom();
		json_decref(body);
		if (rc < 0) {
			json_t *idx = json_object_get(err, "index");
			const char *field = json_string_value(json_object_get(err, "field"));

			if (json_is_integer(idx) && json_integer_value(idx) >= 0 &&
			    (size_t)json_integer_value(idx) < names.count)
				rc = kiln_fail(rc, "%s: %s%s%s%s", names.names[json_integer_value(idx)],
					       import_message(err), field ? " (field " : "",
					       field ? field : "", field ? ")" : "");
			goto cleanup;
		}
		out = json_incref(res);
	}
	if (!json_is_array(out)) {
		rc = out ? kiln_fail(KILN_EPROTO, "kilnd's answer is not a list of nodes") : oom();
		goto cleanup;
	}
	warnings_print(out);
	if (ctx->output == CLI_OUT_JSON) {
		nodes_tag(out);
		rc = out_json_print(out, stdout);
	} else {
		printf("added %s (%zu node%s)\n", range, names.count, names.count == 1 ? "" : "s");
	}
cleanup:
	node_body_free(&p.nb);
	kiln_nodelist_free(&names);
	json_decref(res);
	json_decref(out);
	json_decref(list);
	json_decref(err);
	free(range);
	free(pos.v);
	return rc;
}

/* GET /nodes[?range=R]; *out is the array. */
static int nodes_get(json_t **out, struct cli_ctx *ctx, const char *range)
{
	struct kiln_buf path;
	char *q = NULL;
	int rc;

	kiln_buf_init(&path, 0);
	if (range && !(q = cli_url_escape(range)))
		return oom();
	rc = kiln_buf_printf(&path, "/nodes%s%s", q ? "?range=" : "", q ? q : "");
	if (rc == 0)
		rc = cli_api(out, NULL, ctx, "GET", path.data, NULL);
	if (rc == 0 && !json_is_array(*out)) {
		json_decref(*out);
		*out = NULL;
		rc = kiln_fail(KILN_EPROTO, "kilnd's node list is not an array");
	}
	free(q);
	kiln_buf_free(&path);
	return rc;
}

static int node_list(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	json_t *nodes = NULL;
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "[NODERANGE]",
			       "Lists nodes, all of them or those of a range (gpu[01-08], @group, "
			       "-exclusions, all).", NULL);
		goto cleanup;
	}
	if (pos.n > 1) {
		rc = cli_usage_error(ctx, "unexpected argument '%s' (one NODERANGE; use commas to "
				     "join ranges)", pos.v[1]);
		goto cleanup;
	}
	rc = nodes_get(&nodes, ctx, pos.n ? pos.v[0] : NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		nodes_tag(nodes);
		rc = out_json_print(nodes, stdout);
	} else {
		rc = nodes_table_print(nodes);
	}
cleanup:
	json_decref(nodes);
	free(pos.v);
	return rc;
}

/* "/nodes/NAME" for a valid node name; usage error otherwise. */
static int node_path(char *buf, size_t len, struct cli_ctx *ctx, const char *name)
{
	if (!kiln_node_name_valid(name))
		return cli_usage_error(ctx, "'%s' is not a valid node name", name);
	snprintf(buf, len, "/nodes/%s", name);
	return 0;
}

static int node_show(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	json_t *node = NULL;
	char path[128];
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NAME", "Shows one node's settings (never its password).",
			       NULL);
		goto cleanup;
	}
	rc = one_arg(ctx, &pos, "NAME");
	if (rc == 0)
		rc = node_path(path, sizeof(path), ctx, pos.v[0]);
	if (rc == 0)
		rc = cli_api(&node, NULL, ctx, "GET", path, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		nodes_tag(node);
		rc = out_json_print(node, stdout);
	} else {
		rc = node_show_print(node);
	}
cleanup:
	json_decref(node);
	free(pos.v);
	return rc;
}

static int node_set(struct cli_ctx *ctx, int argc, char **argv)
{
	struct node_parse p = { .ctx = ctx };
	struct cli_args pos = { 0 };
	json_t *node = NULL, *shown = NULL;
	char path[128];
	int rc;

	p.nb.obj = json_object();
	if (!p.nb.obj)
		return oom();
	rc = cli_args_parse(&pos, ctx, node_set_opts, argc - 1, argv + 1, node_opt, &p);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NAME [options] [--clear FIELD]...",
			       "Changes a node's settings; what is not given stays. --group replaces the "
			       "group list\n(--clear group empties it). A new password comes from "
			       "--bmc-password-file or --ask-bmc-password.", node_set_opts);
		goto cleanup;
	}
	rc = one_arg(ctx, &pos, "NAME");
	if (rc == 0)
		rc = node_path(path, sizeof(path), ctx, pos.v[0]);
	if (rc == 0)
		rc = node_body_finish(&p.nb, pos.v[0], false);
	if (rc == 0 && json_object_size(p.nb.obj) == 0)
		rc = cli_usage_error(ctx, "nothing to change");
	if (rc < 0)
		goto cleanup;
	if (ctx->dry_run) {
		shown = node_body_printable(p.nb.obj);
		if (!shown) {
			rc = oom();
		} else if (ctx->output == CLI_OUT_JSON) {
			json_object_set_new(shown, "node", json_string(pos.v[0]));
			rc = out_json_print(shown, stdout);
		} else {
			char *text = json_dumps(shown, JSON_COMPACT | JSON_SORT_KEYS);

			printf("would change %s: %s\n", pos.v[0], text ? text : "?");
			free(text);
		}
		goto cleanup;
	}
	rc = cli_api(&node, NULL, ctx, "PATCH", path, p.nb.obj);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		nodes_tag(node);
		rc = out_json_print(node, stdout);
	} else {
		printf("updated %s\n", pos.v[0]);
	}
cleanup:
	node_body_free(&p.nb);
	json_decref(node);
	json_decref(shown);
	free(pos.v);
	return rc;
}

static int node_rm(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	json_t *targets = NULL, *res = NULL;
	char *q = NULL, *range = NULL, question[512];
	struct kiln_buf path;
	size_t i;
	json_t *n;
	int rc;

	kiln_buf_init(&path, 0);
	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		if (!ctx->list) /* the listing has one line per thing */
			printf("Removing more than %d nodes asks for confirmation unless --yes is "
			       "given.\n\n", RM_CONFIRM_ABOVE);
		cli_help_print(stdout, ctx, "NODERANGE",
			       "Removes nodes, all or nothing: a name in the range that does not exist "
			       "fails the whole request.", NULL);
		goto cleanup;
	}
	rc = one_arg(ctx, &pos, "NODERANGE");
	if (rc < 0)
		goto cleanup;
	if (!ctx->yes || ctx->dry_run) {
		rc = nodes_get(&targets, ctx, pos.v[0]);
		if (rc < 0)
			goto cleanup;
		if (json_array_size(targets) == 0) {
			rc = kiln_fail(KILN_ENOTFOUND, "no node matches '%s'", pos.v[0]);
			goto cleanup;
		}
		range = names_compress(targets, "name");
	}
	if (ctx->dry_run) {
		if (ctx->output == CLI_OUT_JSON) {
			json_t *out = json_array();

			json_array_foreach(targets, i, n)
				json_array_append_new(out, json_pack("{s:O,s:b}", "node",
								     json_object_get(n, "name"),
								     "deleted", 0));
			rc = out ? out_json_print(out, stdout) : oom();
			json_decref(out);
		} else {
			json_array_foreach(targets, i, n)
				printf("would remove %s\n", json_string_value(json_object_get(n, "name")));
		}
		goto cleanup;
	}
	if (!ctx->yes && json_array_size(targets) > RM_CONFIRM_ABOVE) {
		snprintf(question, sizeof(question), "Remove %zu nodes (%.400s)?",
			 json_array_size(targets), range ? range : pos.v[0]);
		rc = prompt_confirm(question);
		if (rc == KILN_ENOTFOUND) {
			rc = kiln_fail(KILN_ERROR, "removing %zu nodes needs --yes (no terminal to "
				       "confirm on)", json_array_size(targets));
			goto cleanup;
		}
		if (rc == 0) {
			rc = kiln_fail(KILN_ERROR, "nothing removed");
			goto cleanup;
		}
	}
	q = cli_url_escape(pos.v[0]);
	rc = q ? kiln_buf_printf(&path, "/nodes?range=%s", q) : oom();
	if (rc == 0)
		rc = cli_api(&res, NULL, ctx, "DELETE", path.data, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		rc = out_json_print(res, stdout);
	} else {
		free(range);
		range = names_compress(res, "node");
		printf("removed %s (%zu node%s)\n", range ? range : pos.v[0], json_array_size(res),
		       json_array_size(res) == 1 ? "" : "s");
	}
cleanup:
	json_decref(targets);
	json_decref(res);
	kiln_buf_free(&path);
	free(q);
	free(range);
	free(pos.v);
	return rc;
}

/* The import columns: add's long options without dashes, with '_' for '-'. */
static const struct cli_opt *column_opt(const char *column)
{
	char name[64];

	kiln_strlcpy(name, column, sizeof(name));
	for (size_t i = 0; name[i]; i++)
		name[i] = name[i] == '_' ? '-' : (char)tolower((unsigned char)name[i]);
	for (const struct cli_opt *o = node_add_opts; o->name; o++)
		if (strcmp(o->name, name) == 0 && o->id != NODE_O_ASK_BMC_PASSWORD)
			return o;
	return NULL;
}

/* The CSV column behind an API field, for error messages. */
static const char *field_column(const char *field)
{
	static const char *const map[][2] = {
		{ "groups", "group" },
		{ "tls_ca_file", "tls_ca" },
		{ "bmc_password", "bmc_password_file" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i][0], field) == 0)
			return map[i][1];
	return field;
}

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	return s;
}

/* Sets one CSV cell on a node body; a flag column takes yes/no, group takes "a;b". */
static int cell_apply(struct node_body *nb, const struct cli_opt *opt, char *value)
{
	bool on;
	int rc = 0;

	if (!*value)
		return 0;
	if (!opt->arg) {
		if (kiln_parse_bool(&on, value) < 0)
			return kiln_fail(KILN_EINVAL, "'%s' is not yes or no", value);
		return on ? node_body_set(nb, opt, value) : 0;
	}
	if (opt->id == NODE_O_GROUP) {
		char *save = NULL;

		for (char *g = value; g && rc == 0; g = save) {
			save = strchr(g, ';');
			if (save)
				*save++ = '\0';
			g = trim(g);
			if (*g)
				rc = node_body_set(nb, opt, g);
		}
		return rc;
	}
	return node_body_set(nb, opt, value);
}

/* Builds the import body from the CSV document; errors name the line and the column. */
static int import_body(json_t *nodes, const struct csv_doc *doc, const char *file,
		       const char *base_dir, const struct cli_opt **cols)
{
	const struct csv_record *hdr = &doc->records[0];
	int rc = 0;

	for (size_t r = 1; r < doc->count && rc == 0; r++) {
		const struct csv_record *rec = &doc->records[r];
		struct node_body nb = { .base_dir = base_dir };
		const char *name = NULL;

		if (rec->count != hdr->count)
			return kiln_fail(KILN_EINVAL, "%s: line %zu: %zu fields, the header has %zu", file,
					 rec->line, rec->count, hdr->count);
		nb.obj = json_object();
		if (!nb.obj)
			return oom();
		for (size_t c = 0; c < rec->count && rc == 0; c++) {
			char *value = trim(rec->fields[c]);

			if (!cols[c]) {
				if (!kiln_node_name_valid(value))
					rc = kiln_fail(KILN_EINVAL, "'%s' is not a valid node name", value);
				else
					name = value;
			} else {
				rc = cell_apply(&nb, cols[c], value);
			}
			if (rc < 0)
				rc = kiln_fail_prefix(rc, "%s: line %zu, column %s", file, rec->line,
						      trim(hdr->fields[c]));
		}
		if (rc == 0 && !json_object_get(nb.obj, "bmc") &&
		    (json_object_get(nb.obj, "bmc_user") || nb.password_file))
			rc = kiln_fail(KILN_EINVAL, "%s: line %zu, column bmc: BMC credentials need a bmc",
				       file, rec->line);
		if (rc == 0) {
			rc = node_body_finish(&nb, name, false);
			if (rc < 0)
				rc = kiln_fail_prefix(rc, "%s: line %zu, column bmc_password_file", file,
						      rec->line);
		}
		if (rc == 0 && (json_object_set_new(nb.obj, "name", json_string(name)) < 0 ||
				json_array_append(nodes, nb.obj) < 0))
			rc = oom();
		node_body_free(&nb);
	}
	return rc;
}

/* Maps the header to options; cols[c] is NULL for the name column. */
static int import_columns(const struct cli_opt **cols, const struct csv_record *hdr,
			  const char *file)
{
	bool have_name = false;

	for (size_t c = 0; c < hdr->count; c++) {
		char *col = trim(hdr->fields[c]);

		for (size_t d = 0; d < c; d++)
			if (strcmp(trim(hdr->fields[d]), col) == 0)
				return kiln_fail(KILN_EINVAL, "%s: line %zu: column '%s' appears twice",
						 file, hdr->line, col);
		if (strcmp(col, "name") == 0) {
			have_name = true;
			cols[c] = NULL;
		} else if (!(cols[c] = column_opt(col))) {
			return kiln_fail(KILN_EINVAL, "%s: line %zu: unknown column '%s' (name, bmc, "
					 "bmc_user, bmc_password_file, group, rack, tls_insecure, tls_ca, "
					 "tls_fingerprint, ipmi_cipher, ipmi_privilege, ipmi_workarounds, "
					 "sol, bmc_system)", file, hdr->line, col);
		}
	}
	if (!have_name)
		return kiln_fail(KILN_EINVAL, "%s: line %zu: no 'name' column", file, hdr->line);
	return 0;
}

static int node_import(struct cli_ctx *ctx, int argc, char **argv)
{
	struct csv_doc doc = { 0 };
	struct cli_args pos = { 0 };
	const struct cli_opt **cols = NULL;
	json_t *nodes = NULL, *body = NULL, *res = NULL, *err = NULL;
	char *dir = NULL, *slash, *range = NULL;
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "FILE.csv",
			       "Adds the nodes of a CSV file, all or nothing. The header names the "
			       "columns after\n'node add' options without dashes: name, bmc, bmc_user, "
			       "bmc_password_file, group\n(several separated by ';'), rack, "
			       "tls_insecure (yes/no), tls_ca, tls_fingerprint, ipmi_cipher,\n"
			       "ipmi_privilege, ipmi_workarounds, sol, bmc_system. Empty cells are not "
			       "set. Relative\nfile names are taken from the CSV file's folder. No BMC "
			       "is asked (unlike node add):\nthe poller reads them; 'kiln status' "
			       "shows those that do not answer or do not fit.", NULL);
		goto cleanup;
	}
	rc = one_arg(ctx, &pos, "FILE.csv");
	if (rc == 0)
		rc = csv_load_file(&doc, pos.v[0]);
	if (rc < 0)
		goto cleanup;
	if (doc.count < 2) {
		rc = kiln_fail(KILN_EINVAL, "%s: %s", pos.v[0],
			       doc.count ? "no nodes after the header" : "empty file");
		goto cleanup;
	}
	dir = strdup(pos.v[0]);
	cols = calloc(doc.records[0].count, sizeof(*cols));
	nodes = json_array();
	if (!dir || !cols || !nodes) {
		rc = oom();
		goto cleanup;
	}
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	rc = import_columns(cols, &doc.records[0], pos.v[0]);
	if (rc == 0)
		rc = import_body(nodes, &doc, pos.v[0], slash ? dir : NULL, cols);
	if (rc < 0)
		goto cleanup;
	range = names_compress(nodes, "name");
	if (ctx->dry_run) {
		size_t i;
		json_t *n, *out = json_array();

		json_array_foreach(nodes, i, n) {
			if (ctx->output == CLI_OUT_JSON)
				json_array_append_new(out, node_body_printable(n));
			else
				printf("would add %s\n", json_string_value(json_object_get(n, "name")));
		}
		if (ctx->output == CLI_OUT_JSON)
			rc = out ? out_json_print(out, stdout) : oom();
		json_decref(out);
		goto cleanup;
	}
	body = json_pack("{s:O}", "nodes", nodes);
	rc = body ? cli_api(&res, &err, ctx, "POST", "/nodes/import", body) : oom();
	if (rc < 0) {
		json_t *idx = json_object_get(err, "index");
		const char *field = json_string_value(json_object_get(err, "field"));

		if (json_is_integer(idx) && json_integer_value(idx) >= 0 &&
		    (size_t)json_integer_value(idx) + 1 < doc.count) {
			size_t line = doc.records[json_integer_value(idx) + 1].line;

			if (field)
				rc = kiln_fail(rc, "%s: line %zu, column %s: %s", pos.v[0], line,
					       field_column(field), import_message(err));
			else
				rc = kiln_fail(rc, "%s: line %zu: %s", pos.v[0], line,
					       import_message(err));
		}
		rc = kiln_fail_prefix(rc, "nothing imported");
		goto cleanup;
	}
	warnings_print(res);
	if (ctx->output == CLI_OUT_JSON) {
		nodes_tag(res);
		rc = out_json_print(res, stdout);
	} else {
		printf("imported %s (%zu node%s)\n", range ? range : "", json_array_size(nodes),
		       json_array_size(nodes) == 1 ? "" : "s");
	}
cleanup:
	csv_doc_free(&doc);
	json_decref(nodes);
	json_decref(body);
	json_decref(res);
	json_decref(err);
	free(cols);
	free(dir);
	free(range);
	free(pos.v);
	return rc;
}

static const struct cli_verb verbs[] = {
	{ "add", "NODERANGE [options]", "add nodes", node_add },
	{ "list", "[NODERANGE]", "list nodes", node_list },
	{ "show", "NAME", "show one node", node_show },
	{ "set", "NAME [options]", "change a node's settings", node_set },
	{ "rm", "NODERANGE", "remove nodes", node_rm },
	{ "import", "FILE.csv", "add the nodes of a CSV file", node_import },
	{ "maintenance", "NODERANGE on|off --reason TEXT", "put nodes in or out of maintenance",
	  cli_node_maintenance },
	{ 0 },
};

static int node_run(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_verb_dispatch(ctx, "The node inventory: names, groups, BMC addresses and "
				 "credentials.", verbs, argc, argv);
}

const struct cli_cmd cmd_node = { "node", "add, list, show, change and remove nodes", node_run };
